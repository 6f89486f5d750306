package runtime

import (
	"bytes"
	"io"
	"sync"
	"time"
)

// Container logs are kept in the CRI log format, as containerd's CRI
// plugin writes them and the kubelet reads them: one entry per line,
//
//	2016-10-06T00:17:09.669794202Z stdout F a whole line
//	2016-10-06T00:17:09.669794203Z stderr P the first 16KiB of a longer one
//
// where F marks a full line and P a partial one, continued by the next
// entry of the same stream.
const (
	tagFull    = "F"
	tagPartial = "P"
	// maxLogLine is where a long line is cut into partial entries
	// (containerd's default max_container_log_line_size).
	maxLogLine = 16 * 1024
	// timeFormatOut is how kubectl logs --timestamps prints the time: as
	// the kubelet does, RFC 3339 with nanoseconds always nine digits.
	timeFormatOut = "2006-01-02T15:04:05.000000000Z07:00"
)

// LogWriter writes the output streams of one container into w in the CRI
// log format. Entries are whole lines, each written at once, so that
// stdout and stderr can share w.
type LogWriter struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// NewLogWriter writes to w, stamping entries with now (default time.Now).
func NewLogWriter(w io.Writer, now func() time.Time) *LogWriter {
	if now == nil {
		now = time.Now
	}
	return &LogWriter{w: w, now: now}
}

// Stream returns the writer of one stream ("stdout" or "stderr"). Close it
// at the stream's end to write an unterminated last line.
func (l *LogWriter) Stream(name string) io.WriteCloser {
	return &lineWriter{log: l, stream: name}
}

func (l *LogWriter) entry(stream, tag string, line []byte) error {
	ts := l.now().UTC().Format(time.RFC3339Nano)
	buf := make([]byte, 0, len(ts)+len(stream)+len(tag)+len(line)+4)
	buf = append(append(append(append(buf, ts...), ' '), stream...), ' ')
	buf = append(append(append(buf, tag...), ' '), line...)
	buf = append(buf, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(buf)
	return err
}

// lineWriter cuts one stream into entries.
type lineWriter struct {
	log     *LogWriter
	stream  string
	pending []byte // the start of a line not yet ended
}

func (s *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.pending = append(s.pending, p...)
			for len(s.pending) >= maxLogLine {
				if err := s.log.entry(s.stream, tagPartial, s.pending[:maxLogLine]); err != nil {
					return 0, err
				}
				s.pending = s.pending[maxLogLine:]
			}
			break
		}
		line := p[:i]
		if len(s.pending) > 0 {
			line = append(s.pending, line...)
			s.pending = nil
		}
		for len(line) > maxLogLine {
			if err := s.log.entry(s.stream, tagPartial, line[:maxLogLine]); err != nil {
				return 0, err
			}
			line = line[maxLogLine:]
		}
		if err := s.log.entry(s.stream, tagFull, line); err != nil {
			return 0, err
		}
		p = p[i+1:]
	}
	if len(s.pending) == 0 {
		s.pending = nil // do not keep a large buffer alive
	}
	return n, nil
}

// Close writes the unterminated last line as a full one, as containerd does.
func (s *lineWriter) Close() error {
	if len(s.pending) == 0 {
		return nil
	}
	err := s.log.entry(s.stream, tagFull, s.pending)
	s.pending = nil
	return err
}

// logEntry is one parsed line of a CRI log.
type logEntry struct {
	time    time.Time
	partial bool
	content []byte
}

// parseLogLine parses one CRI log line, its trailing newline included.
func parseLogLine(line []byte) (logEntry, bool) {
	fields := bytes.SplitN(line, []byte{' '}, 4)
	if len(fields) != 4 {
		return logEntry{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil || (string(fields[1]) != "stdout" && string(fields[1]) != "stderr") {
		return logEntry{}, false
	}
	e := logEntry{time: t, partial: string(fields[2]) == tagPartial, content: fields[3]}
	if e.partial {
		e.content = bytes.TrimSuffix(e.content, []byte{'\n'})
	}
	return e, true
}

// logFormatter turns CRI log lines into what kubectl logs prints,
// honouring timestamps, since_time and limit_bytes as the kubelet does.
type logFormatter struct {
	w          io.Writer
	timestamps bool
	since      time.Time // zero: all
	remaining  int64     // bytes left to write; negative: no limit
}

// write formats one line; done reports that the byte limit is reached.
func (f *logFormatter) write(line []byte) (done bool, err error) {
	out := line
	if e, ok := parseLogLine(line); ok {
		if e.time.Before(f.since) {
			return false, nil
		}
		out = e.content
		if f.timestamps {
			out = append([]byte(e.time.Format(timeFormatOut)+" "), out...)
		}
	}
	if f.remaining >= 0 && int64(len(out)) >= f.remaining {
		_, err := f.w.Write(out[:f.remaining])
		return true, err
	}
	if f.remaining >= 0 {
		f.remaining -= int64(len(out))
	}
	_, err = f.w.Write(out)
	return false, err
}
