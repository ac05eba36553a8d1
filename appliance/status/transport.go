package status

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The spec wants health checks and push POSTs on "a bounded curl
// transport": curl runs with hard limits (connect timeout, total time,
// response size) in its own process, so a hung or hostile push server can
// neither stall a goroutine nor fill memory. When curl is not on the PATH
// the Go client is used with the same limits; every result says which ran.

// Request is one outbound HTTP request.
type Request struct {
	Method string
	URL    string
	Header map[string]string // kept out of curl's argv: secrets never show in ps
	Body   []byte
}

// Response is what came back.
type Response struct {
	Status    int
	Header    http.Header
	Body      []byte
	Duration  time.Duration
	Transport string // "curl" or "go"
}

// TransportError is a failed exchange with a stable code: timeout,
// connection_refused, dns, tls, too_large, transport.
type TransportError struct {
	Code string
	Msg  string
}

func (e *TransportError) Error() string { return e.Msg }

// Limits bound every request.
type Limits struct {
	Connect time.Duration // default 5 s
	Total   time.Duration // default 10 s
	MaxBody int64         // response body bytes, default 64 KiB
}

// Transport runs requests through curl or the Go client.
type Transport struct {
	lim  Limits
	curl string
	http *http.Client
}

// NewTransport picks curl when it is on the PATH, unless forceGo.
func NewTransport(lim Limits, forceGo bool) *Transport {
	if lim.Connect <= 0 {
		lim.Connect = 5 * time.Second
	}
	if lim.Total <= 0 {
		lim.Total = 10 * time.Second
	}
	if lim.MaxBody <= 0 {
		lim.MaxBody = 64 << 10
	}
	t := &Transport{lim: lim}
	if !forceGo {
		if p, err := exec.LookPath("curl"); err == nil {
			t.curl = p
		}
	}
	t.http = &http.Client{Timeout: lim.Total, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: (&net.Dialer{Timeout: lim.Connect}).DialContext,
			TLSHandshakeTimeout: lim.Connect, ResponseHeaderTimeout: lim.Total, MaxIdleConnsPerHost: 2}}
	return t
}

// Name is the transport requests will use.
func (t *Transport) Name() string {
	if t.curl != "" {
		return "curl"
	}
	return "go"
}

// Do runs one request.
func (t *Transport) Do(ctx context.Context, r Request) (Response, error) {
	if r.Method == "" {
		r.Method = http.MethodGet
	}
	if t.curl != "" {
		return t.doCurl(ctx, r)
	}
	return t.doGo(ctx, r)
}

func (t *Transport) doGo(ctx context.Context, r Request) (Response, error) {
	out := Response{Transport: "go"}
	ctx, cancel := context.WithTimeout(ctx, t.lim.Total)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return out, &TransportError{"transport", "bad URL"}
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := t.http.Do(req)
	if err != nil {
		out.Duration = time.Since(start)
		return out, goError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, t.lim.MaxBody+1))
	out.Duration, out.Status, out.Header = time.Since(start), resp.StatusCode, resp.Header
	if err != nil {
		return out, goError(err)
	}
	if int64(len(body)) > t.lim.MaxBody {
		return out, &TransportError{"too_large", "response larger than " + strconv.FormatInt(t.lim.MaxBody, 10) + " bytes"}
	}
	out.Body = body
	return out, nil
}

func goError(err error) *TransportError {
	var dns *net.DNSError
	var op *net.OpError
	var t interface{ Timeout() bool }
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &t) && t.Timeout():
		return &TransportError{"timeout", "no answer within the time limit"}
	case errors.As(err, &dns):
		return &TransportError{"dns", "host name does not resolve"}
	case errors.As(err, &op) && op.Op == "dial":
		return &TransportError{"connection_refused", "cannot connect"}
	case strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509"):
		return &TransportError{"tls", "TLS handshake failed"}
	}
	return &TransportError{"transport", "request failed"}
}

// curlQuote quotes a value for curl's config syntax.
func curlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// cappedBuffer keeps at most max bytes and notes the overflow, so an
// oversized answer can neither block curl on a full pipe nor fill memory.
type cappedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room < len(p) {
		c.over = true
		if room > 0 {
			c.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return c.Buffer.Write(p)
}

func (t *Transport) doCurl(ctx context.Context, r Request) (Response, error) {
	out := Response{Transport: "curl"}
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
	// -q must come first: no ~/.curlrc. Everything request-specific goes
	// through the config on stdin.
	args := []string{"-q", "--silent", "--show-error", "--proto", "=http,https", "--max-redirs", "0",
		"--connect-timeout", secs(t.lim.Connect), "--max-time", secs(t.lim.Total),
		"--max-filesize", strconv.FormatInt(t.lim.MaxBody, 10), "--dump-header", "-", "--config", "-"}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "url = %s\nrequest = %s\n", curlQuote(r.URL), curlQuote(r.Method))
	for k, v := range r.Header {
		fmt.Fprintf(&cfg, "header = %s\n", curlQuote(k+": "+v))
	}
	if r.Body != nil {
		fmt.Fprintf(&cfg, "data-binary = %s\n", curlQuote(string(r.Body)))
	}
	// The context only backs up curl's own --max-time.
	ctx, cancel := context.WithTimeout(ctx, t.lim.Total+2*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, t.curl, args...)
	cmd.Stdin = strings.NewReader(cfg.String())
	stdout := &cappedBuffer{max: int(t.lim.MaxBody) + 16<<10}
	var stderr cappedBuffer
	stderr.max = 4 << 10
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	out.Duration = time.Since(start)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out, curlError(ee.ExitCode())
		}
		if ctx.Err() != nil {
			return out, &TransportError{"timeout", "no answer within the time limit"}
		}
		return out, &TransportError{"transport", "curl could not run"}
	}
	status, hdr, body, ok := parseCurlOutput(stdout.Bytes())
	if !ok {
		return out, &TransportError{"transport", "unreadable HTTP answer"}
	}
	out.Status, out.Header = status, hdr
	if stdout.over || int64(len(body)) > t.lim.MaxBody {
		return out, &TransportError{"too_large", "response larger than " + strconv.FormatInt(t.lim.MaxBody, 10) + " bytes"}
	}
	out.Body = body
	return out, nil
}

// curlError maps curl exit codes (man curl, "EXIT CODES").
func curlError(code int) *TransportError {
	switch code {
	case 28:
		return &TransportError{"timeout", "no answer within the time limit"}
	case 7:
		return &TransportError{"connection_refused", "cannot connect"}
	case 6, 5:
		return &TransportError{"dns", "host name does not resolve"}
	case 63:
		return &TransportError{"too_large", "response too large"}
	case 35, 51, 58, 59, 60, 77, 80, 83, 90, 91:
		return &TransportError{"tls", "TLS handshake failed"}
	}
	return &TransportError{"transport", "curl exit " + strconv.Itoa(code)}
}

// parseCurlOutput splits --dump-header output (one block per response,
// interim 1xx blocks first) from the body.
func parseCurlOutput(b []byte) (int, http.Header, []byte, bool) {
	for {
		if !bytes.HasPrefix(b, []byte("HTTP/")) {
			return 0, nil, nil, false
		}
		end := bytes.Index(b, []byte("\r\n\r\n"))
		if end < 0 {
			return 0, nil, nil, false
		}
		block := b[:end+4]
		b = b[end+4:]
		line, rest, _ := bytes.Cut(block, []byte("\r\n"))
		fields := strings.Fields(string(line))
		if len(fields) < 2 {
			return 0, nil, nil, false
		}
		status, err := strconv.Atoi(fields[1])
		if err != nil {
			return 0, nil, nil, false
		}
		if status >= 100 && status < 200 {
			continue
		}
		tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(rest)))
		mh, _ := tp.ReadMIMEHeader()
		return status, http.Header(mh), b, true
	}
}
