package observatory

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// The Observatory speaks two wire forms on one hub. Seed 000's, at the
// root path: {"action":"subscribe"|"unsubscribe","channel":"reasoning"|
// "sessions","sessionId"?} in, {"channel","event","data"} out (the data
// are seed 002's payloads, the same as ours), and text "ping" answered by
// "pong". Ours, at /ws: [topic, event, payload] both ways. A connection's
// first message says which it speaks; either path accepts either.

// form is the wire form of a connection.
type form int

const (
	formUnknown form = iota
	formOurs
	formSeed
)

// The seed's channels.
const (
	ChannelReasoning = "reasoning"
	ChannelSessions  = "sessions"
)

// topicAllReasoning is the hub's topic for a seed subscription to the
// reasoning channel without a session id: every session's thoughts as
// they are committed, without snapshots. It has no colon, so no
// [topic, event] message can name it.
const topicAllReasoning = "reasoning"

// seedRequest is a message of seed 000's form.
type seedRequest struct {
	Action    string  `json:"action"`
	Channel   string  `json:"channel"`
	SessionID *string `json:"sessionId"`
}

// formOf says which form a message is written in, from its first byte.
func formOf(data []byte) form {
	switch t := bytes.TrimLeft(data, " \t\r\n"); {
	case len(t) > 0 && t[0] == '{':
		return formSeed
	case len(t) > 0 && t[0] == '[':
		return formOurs
	}
	return formUnknown
}

const (
	expectSeed = `{"action":"subscribe"|"unsubscribe","channel":"reasoning"|"sessions","sessionId"?:"<id>"}`
	expectOurs = `[topic, event, payload]`
)

// wrongForm is the error for a message that is neither form, or not the
// one the connection speaks.
func wrongForm(speaks form, data []byte) error {
	got := formOf(data)
	switch {
	case speaks == formSeed && got == formOurs:
		return ledger.Errorf(ledger.CodeInvalidPayload, "this connection speaks the seed form, expected %s or the text ping", expectSeed)
	case speaks == formOurs && got == formSeed:
		return ledger.Errorf(ledger.CodeInvalidPayload, "this connection speaks the [topic, event, payload] form, expected %s", expectOurs)
	}
	return ledger.Errorf(ledger.CodeInvalidPayload, "message is neither form the Observatory reads: expected %s, %s, or the text ping", expectSeed, expectOurs)
}

// parseSeed decodes a seed-form request, naming the field that is wrong.
func parseSeed(data []byte) (seedRequest, error) {
	var q seedRequest
	if err := json.Unmarshal(data, &q); err != nil {
		return q, ledger.Errorf(ledger.CodeInvalidPayload, "message is not valid JSON (%v): expected %s", err, expectSeed)
	}
	if q.Action != "subscribe" && q.Action != "unsubscribe" {
		return q, ledger.InvalidField("action", "must be subscribe or unsubscribe, got %q", q.Action)
	}
	if q.Channel != ChannelReasoning && q.Channel != ChannelSessions {
		return q, ledger.InvalidField("channel", "must be reasoning or sessions, got %q", q.Channel)
	}
	if q.SessionID != nil && *q.SessionID == "" {
		return q, ledger.InvalidField("sessionId", "must name a session when given")
	}
	return q, nil
}

// handleSeed runs one seed-form request.
func (o *Observatory) handleSeed(ctx context.Context, c *client, q seedRequest) {
	id := ""
	if q.SessionID != nil {
		id = *q.SessionID
	}
	if q.Action == "unsubscribe" {
		o.hub.unsubscribeSeed(c, q.Channel, id)
		return
	}
	if err := o.allowSubscribe(c); err != nil {
		o.hub.sendError(c, channelTopic(q.Channel, id), err)
		return
	}
	switch {
	case q.Channel == ChannelSessions:
		o.hub.subscribeFiltered(ctx, c, TopicObservatory, id)
	case id != "":
		o.hub.subscribe(ctx, c, TopicReasoningPrefix+id)
	default:
		o.hub.subscribeAll(c)
	}
}

// channelTopic is the hub topic a seed channel (and session id) stands for.
func channelTopic(channel, id string) string {
	switch {
	case channel == ChannelSessions:
		return TopicObservatory
	case id != "":
		return TopicReasoningPrefix + id
	}
	return topicAllReasoning
}

// seedMessage rewrites a message of our form, [topic, event, payload] as
// encode makes it, into the seed's {channel, event, sessionId?, data}.
// The payload is copied, not parsed.
func seedMessage(msg []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(msg))
	var topic, event string
	if _, err := dec.Token(); err != nil {
		return msg
	}
	if t, err := dec.Token(); err == nil {
		topic, _ = t.(string)
	}
	if t, err := dec.Token(); err == nil {
		event, _ = t.(string)
	}
	rest := bytes.TrimLeft(msg[dec.InputOffset():], ", \t\r\n")
	payload := bytes.TrimRight(rest, " \t\r\n")
	payload = payload[:max(0, len(payload)-1)] // the closing bracket
	if len(payload) == 0 {
		payload = []byte("null")
	}
	channel, id := ChannelReasoning, ""
	switch {
	case topic == TopicObservatory:
		channel = ChannelSessions
	case strings.HasPrefix(topic, TopicReasoningPrefix):
		id = strings.TrimPrefix(topic, TopicReasoningPrefix)
	case topic == "":
		channel = ""
	}
	head, _ := json.Marshal(struct {
		Channel   string `json:"channel"`
		Event     string `json:"event"`
		SessionID string `json:"sessionId,omitempty"`
	}{channel, event, id})
	out := make([]byte, 0, len(head)+len(payload)+9)
	out = append(out, head[:len(head)-1]...)
	out = append(out, `,"data":`...)
	out = append(out, payload...)
	return append(out, '}')
}

// subscribeAll adds c to every session's thoughts (seed: the reasoning
// channel without a session id). There is no snapshot to send.
func (h *hub) subscribeAll(c *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := c.subs[topicAllReasoning]; !ok {
		h.addLocked(c, topicAllReasoning, &subscription{live: true})
	}
	h.queueLocked(c, encode(topicAllReasoning, "subscribed", map[string]any{"channel": ChannelReasoning}))
}

// subscribeFiltered is subscribe for the observatory topic, keeping only
// the events of session only when it is set (seed: the sessions channel
// with a session id).
func (h *hub) subscribeFiltered(ctx context.Context, c *client, topic, only string) {
	h.subscribe(ctx, c, topic)
	h.mu.Lock()
	if s := c.subs[topic]; s != nil {
		s.only = only
	}
	h.mu.Unlock()
}

// unsubscribeSeed ends a seed subscription: the sessions channel, one
// session's reasoning, or (without a session id) all of the reasoning
// channel's subscriptions.
func (h *hub) unsubscribeSeed(c *client, channel, id string) {
	if channel == ChannelSessions || id != "" {
		h.unsubscribe(c, channelTopic(channel, id))
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for topic := range c.subs {
		if topic == topicAllReasoning || strings.HasPrefix(topic, TopicReasoningPrefix) {
			h.unsubscribeLocked(c, topic)
			n++
		}
	}
	if n == 0 {
		h.queueLocked(c, encode(topicAllReasoning, "error", ErrorPayload{Code: ledger.CodeInvalidOperation,
			Message: "not subscribed to the reasoning channel", Details: map[string]any{"channel": ChannelReasoning}}))
		return
	}
	h.queueLocked(c, encode(topicAllReasoning, "unsubscribed", map[string]any{"channel": ChannelReasoning}))
}
