package broker

import (
	"context"
	"log/slog"

	"github.com/mochi-mqtt/server/v2/packets"
)

// mochiHandler sits between mochi's logger and ours.
//
// Levels: mochi logs per-client events (every refused CONNECT, every dropped
// connection, protocol errors, our own hook errors) at Warn or Error. With
// thousands of gateways on flaky Wi-Fi that would drown the appliance log, and
// everything that matters is already counted and logged by this package. So
// all mochi records go to Debug, except Errors we do not produce ourselves,
// which stay visible as Warn.
//
// Attributes: mochi attaches whole packets ("pk", "packet") to some records.
// A CONNECT packet carries the password in clear (mochi logs it, for example,
// when a client sends a second CONNECT) and a PUBLISH carries up to 1 MiB of
// payload, so packets are replaced by their type.
type mochiHandler struct {
	inner slog.Handler
}

func newMochiLogger(l *slog.Logger) *slog.Logger {
	return slog.New(mochiHandler{inner: l.Handler()}).With("component", "mqtt-broker")
}

func mochiLevel(r slog.Record) slog.Level {
	// "publish packet error" is mochi echoing an error our ingest hook
	// returned on purpose; it is logged (once per outage) by deliver.
	if r.Level >= slog.LevelError && r.Message != "publish packet error" {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

func (h mochiHandler) Enabled(ctx context.Context, l slog.Level) bool {
	if l >= slog.LevelError {
		return h.inner.Enabled(ctx, slog.LevelDebug) || h.inner.Enabled(ctx, slog.LevelWarn)
	}
	return h.inner.Enabled(ctx, slog.LevelDebug)
}

func (h mochiHandler) Handle(ctx context.Context, r slog.Record) error {
	lvl := mochiLevel(r)
	if !h.inner.Enabled(ctx, lvl) {
		return nil
	}
	out := slog.NewRecord(r.Time, lvl, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(scrubAttr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h mochiHandler) WithAttrs(as []slog.Attr) slog.Handler {
	scrubbed := make([]slog.Attr, len(as))
	for i, a := range as {
		scrubbed[i] = scrubAttr(a)
	}
	return mochiHandler{inner: h.inner.WithAttrs(scrubbed)}
}

func (h mochiHandler) WithGroup(name string) slog.Handler {
	return mochiHandler{inner: h.inner.WithGroup(name)}
}

func scrubAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, ga := range g {
			out[i] = scrubAttr(ga)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	}
	if v.Kind() != slog.KindAny {
		return a
	}
	switch p := v.Any().(type) {
	case packets.Packet:
		return slog.String(a.Key, packets.PacketNames[p.FixedHeader.Type])
	case *packets.Packet:
		if p == nil {
			return a
		}
		return slog.String(a.Key, packets.PacketNames[p.FixedHeader.Type])
	case packets.ConnectParams, *packets.ConnectParams:
		return slog.String(a.Key, "[redacted]")
	}
	return a
}
