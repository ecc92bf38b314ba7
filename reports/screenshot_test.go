package reports

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/halfopen/rehearse/reports/render"
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

// needChromium is chromium for a screenshot test, which it skips in -short
// mode or when no Chromium is installed.
func needChromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("screenshot test skipped in -short mode")
	}
	bin := chromium()
	if bin == "" {
		t.Skip("chromium not installed: install Debian's chromium package to run the screenshot test")
	}
	return bin
}

// TestScreenshot opens report.html in headless Chromium and checks that the
// timeline really rendered: the top of the page holds the lanes' colours
// (ok green, fast-fail orange, open band) over a large non-white area.
func TestScreenshot(t *testing.T) {
	bin := needChromium(t)
	img := screenshot(t, bin, renderFixture(t, "clean"), 900)
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

// screenshot opens dir's report.html in headless Chromium, 1280 pixels
// wide and height tall, and returns the decoded PNG.
func screenshot(t *testing.T, bin, dir string, height int) image.Image {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+t.TempDir(),
		fmt.Sprintf("--window-size=1280,%d", height), "--hide-scrollbars",
		"--screenshot="+shot, "file://"+filepath.Join(dir, render.HTMLFile))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	return readPNG(t, shot)
}

// readPNG decodes the PNG file at path.
func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

// TestScreenshotFaultBarsLabelled: in Chromium's rendering of report.html
// each fault bar shows in its own colour with its name written on it
// (light text pixels inside the bar), as a reader of a pasted screenshot
// sees it.
func TestScreenshotFaultBarsLabelled(t *testing.T) {
	bin := needChromium(t)
	dir, _ := postmortemRun(t)
	img := screenshot(t, bin, dir, 1400)
	b := img.Bounds()
	for i, name := range []string{"storm", "cut"} {
		c := render.Hex(render.FaultColour[i])
		// The bar is the first band of rows holding many pixels of its
		// colour (the legend's swatch has the first colour too, but is
		// small).
		box := image.Rectangle{Min: b.Max, Max: b.Min}
		n := 0
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row, x0, x1 := 0, b.Max.X, b.Min.X
			for x := b.Min.X; x < b.Max.X; x++ {
				r, g, bl, _ := img.At(x, y).RGBA()
				if near8(r>>8, uint32(c.R)) && near8(g>>8, uint32(c.G)) && near8(bl>>8, uint32(c.B)) {
					row++
					x0, x1 = min(x0, x), max(x1, x+1)
				}
			}
			if row >= 20 {
				n += row
				box = box.Union(image.Rect(x0, y, x1, y+1))
			} else if n > 0 {
				break
			}
		}
		if n < 300 {
			t.Errorf("fault %s: %d pixels of its colour %s in the screenshot; want its bar", name, n, render.FaultColour[i])
			continue
		}
		light := 0
		for y := box.Min.Y; y < box.Max.Y; y++ {
			for x := box.Min.X; x < box.Max.X; x++ {
				r, g, bl, _ := img.At(x, y).RGBA()
				if r>>8 > 200 && g>>8 > 200 && bl>>8 > 200 {
					light++
				}
			}
		}
		t.Logf("fault %s: bar %v, %d bar pixels, %d label pixels", name, box, n, light)
		if box.Dy() < 10 || box.Dy() > 40 {
			t.Errorf("fault %s: bar %v is not one bar's height", name, box)
		}
		if light < 30 {
			t.Errorf("fault %s: %d light pixels inside its bar %v; want its name written on it", name, light, box)
		}
	}
}
