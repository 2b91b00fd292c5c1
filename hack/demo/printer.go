package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// printer writes the demo's narrative. Its methods may be called from
// several goroutines; each line is written whole.
type printer struct {
	mu  sync.Mutex
	out io.Writer
	err io.Writer
}

// newPrinter returns a printer writing the narrative to out and errors to
// errOut.
func newPrinter(out, errOut io.Writer) *printer {
	return &printer{out: out, err: errOut}
}

// step announces a stage of the demo.
func (p *printer) step(format string, args ...any) {
	p.line(p.out, "\n==> "+format, args...)
}

// detailf writes an indented detail of the current stage.
func (p *printer) detailf(format string, args ...any) {
	p.line(p.out, "    "+format, args...)
}

// errorf writes an error to the error output.
func (p *printer) errorf(format string, args ...any) {
	p.line(p.err, format, args...)
}

// event writes one observation of the timeline: the time since the change
// (in seconds, to the millisecond), what was observed, and what happened to
// it, in columns like those of `kubectl get -w`.
func (p *printer) event(since time.Duration, object, what string) {
	p.line(p.out, "    %+8.3fs  %-30s %s", since.Seconds(), object, what)
}

func (p *printer) line(w io.Writer, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(w, format+"\n", args...)
}
