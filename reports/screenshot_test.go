package reports

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// chromium finds a headless-capable Chromium, or "".
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestScreenshot opens report.html in headless Chromium and checks that the
// timeline really rendered: the top of the page holds the lanes' colours
// (ok green, fast-fail orange, open band) over a large non-white area.
func TestScreenshot(t *testing.T) {
	if testing.Short() {
		t.Skip("screenshot test skipped in -short mode")
	}
	bin := chromium()
	if bin == "" {
		t.Skip("chromium not installed: install Debian's chromium package to run the screenshot test")
	}
	dir := renderFixture(t, "clean")
	shot := filepath.Join(t.TempDir(), "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--no-first-run", "--user-data-dir="+t.TempDir(), "--window-size=1280,900", "--hide-scrollbars",
		"--screenshot="+shot, "file://"+filepath.Join(dir, HTMLFile))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	if b.Dx() < 1000 || b.Dy() < 800 {
		t.Fatalf("screenshot %v is too small", b)
	}
	// The timeline sits between the header and the expectations: scan
	// the band y = 150..650.
	region := image.Rect(0, 150, b.Dx(), min(650, b.Dy()))
	var nonWhite, green, orange, pink, total int
	for y := region.Min.Y; y < region.Max.Y; y++ {
		for x := region.Min.X; x < region.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			total++
			if r < 235 || g < 235 || bl < 235 {
				nonWhite++
			}
			switch {
			case near8(r, 0x4c) && near8(g, 0xaf) && near8(bl, 0x50):
				green++
			case near8(r, 0xff) && near8(g, 0x98) && near8(bl, 0x00):
				orange++
			case near8(r, 0xf8) && near8(g, 0xd7) && near8(bl, 0xda):
				pink++
			}
		}
	}
	t.Logf("timeline band: %.1f%% non-white, %d green, %d orange, %d open-band pixels", 100*float64(nonWhite)/float64(total), green, orange, pink)
	if float64(nonWhite)/float64(total) < 0.15 {
		t.Errorf("timeline area is nearly blank: %.1f%% non-white", 100*float64(nonWhite)/float64(total))
	}
	if green < 5000 || orange < 1000 || pink < 1000 {
		t.Errorf("timeline lanes missing: %d ok-green, %d fast-fail-orange, %d open-band pixels", green, orange, pink)
	}
}

func near8(v, want uint32) bool { return v+6 >= want && v <= want+6 }
