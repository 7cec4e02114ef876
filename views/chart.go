package views

import (
	"fmt"
	"strconv"
)

type segment struct{ x, y, w, h, class string }

func maxTotal(hours []HourBar) int64 {
	m := int64(1)
	for _, h := range hours {
		m = max(m, h.Total())
	}
	return m
}

func barX(i, n int) string { return strconv.Itoa(i * chartW / n) }

// segments stacks an hour's outcomes from the bottom: ok, temporary,
// ambiguous, permanent.
func segments(h HourBar, maxN int64, i, n int) []segment {
	w := chartW/n - 4
	y := float64(chartH)
	var out []segment
	for _, part := range []struct {
		n     int64
		class string
	}{{h.OK, "ok"}, {h.Temporary, "temporary"}, {h.Ambiguous, "ambiguous"}, {h.Permanent, "permanent"}} {
		if part.n == 0 {
			continue
		}
		hh := float64(part.n) / float64(maxN) * float64(chartH)
		y -= hh
		out = append(out, segment{x: strconv.Itoa(i*chartW/n + 2), y: fmt.Sprintf("%.1f", y), w: strconv.Itoa(w),
			h: fmt.Sprintf("%.1f", max(hh, 1)), class: part.class})
	}
	return out
}

func hourTitle(h HourBar) string {
	return fmt.Sprintf("%s–%s UTC: %d OK, %d temporary, %d unknown outcome, %d permanent",
		h.Start.UTC().Format("15:04"), h.Start.UTC().Add(59*60e9).Format("15:04"), h.OK, h.Temporary, h.Ambiguous, h.Permanent)
}
