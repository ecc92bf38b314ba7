package analysis

import "fmt"

// fp, fp2 and bounds print optional figures in test messages.
func fp(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func fp2(p *int) any {
	if p == nil {
		return "null"
	}
	return *p
}

func bounds(b *Bounds) string {
	if b == nil {
		return "none"
	}
	return fmt.Sprintf("[%v, %v]", fp(b.Min), fp(b.Max))
}
