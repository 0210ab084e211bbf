package text

import (
	"strconv"
	"strings"
	"time"
)

// strftime formats t with Python's strftime directives that chat templates use (Llama-3.x
// prints "Today Date: 26 Jul 2024" with "%d %b %Y"). Unknown directives are copied as written.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	pad := func(n, w int) {
		s := strconv.Itoa(n)
		for i := len(s); i < w; i++ {
			b.WriteByte('0')
		}
		b.WriteString(s)
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			pad(t.Year(), 4)
		case 'y':
			pad(t.Year()%100, 2)
		case 'm':
			pad(int(t.Month()), 2)
		case 'd':
			pad(t.Day(), 2)
		case 'e':
			b.WriteString(strings.Repeat(" ", 1-min(1, t.Day()/10)) + strconv.Itoa(t.Day()))
		case 'j':
			pad(t.YearDay(), 3)
		case 'H':
			pad(t.Hour(), 2)
		case 'I':
			pad((t.Hour()+11)%12+1, 2)
		case 'M':
			pad(t.Minute(), 2)
		case 'S':
			pad(t.Second(), 2)
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'B':
			b.WriteString(t.Month().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
