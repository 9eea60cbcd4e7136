package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// rawVersion is the protocol version the raw client speaks.
const rawVersion = "2025-11-25"

// rawAgent is an MCP client reduced to what an agent that records
// thoughts needs, on net/http alone: one keep-alive connection, a request
// body built by hand, and the answer read for its error marks only. The
// SDK's client spends about half a millisecond of processor time a call
// on these two cores, as much as a third of the server's; with -client raw
// the benchmark measures the server with a client that costs little.
type rawAgent struct {
	url     string
	hc      *http.Client
	session string // Mcp-Session-Id
	id      int
	buf     bytes.Buffer
}

func newRawAgent(url string) *rawAgent {
	return &rawAgent{url: url, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}}
}

// connect initializes the MCP session.
func (a *rawAgent) connect(ctx context.Context, name string) error {
	params, _ := json.Marshal(map[string]any{"protocolVersion": rawVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]string{"name": name, "version": "1"}})
	if _, err := a.request(ctx, "initialize", params); err != nil {
		return err
	}
	return a.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nil)
}

// call runs one gateway operation and returns the text of its reply.
func (a *rawAgent) call(ctx context.Context, op string, args map[string]any) (string, error) {
	in := map[string]any{"operation": op}
	if args != nil {
		in["args"] = args
	}
	params, err := json.Marshal(map[string]any{"name": "thoughtbox_gateway", "arguments": in})
	if err != nil {
		return "", err
	}
	result, err := a.request(ctx, "tools/call", params)
	if err != nil {
		return "", err
	}
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(result, &res); err != nil {
		return "", fmt.Errorf("%s: result %s: %v", op, result, err)
	}
	text := ""
	if len(res.Content) > 0 {
		text = res.Content[0].Text
	}
	if res.IsError {
		return "", fmt.Errorf("%s: %s", op, text)
	}
	return text, nil
}

// request sends one call and returns its result.
func (a *rawAgent) request(ctx context.Context, method string, params []byte) (json.RawMessage, error) {
	a.id++
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, a.id, method, params)
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := a.post(ctx, body, &resp); err != nil {
		return nil, fmt.Errorf("%s: %v", method, err)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("%s: error %d: %s", method, resp.Error.Code, resp.Error.Message)
	}
	return resp.Result, nil
}

// post sends body and decodes the answer into out (nil: none expected),
// from a JSON body or from the last event of an event stream.
func (a *rawAgent) post(ctx context.Context, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if a.session != "" {
		req.Header.Set("Mcp-Session-Id", a.session)
		req.Header.Set("Mcp-Protocol-Version", rawVersion)
	}
	res, err := a.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	a.buf.Reset()
	if _, err := a.buf.ReadFrom(res.Body); err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %s: %s", res.Status, strings.TrimSpace(a.buf.String()))
	}
	if id := res.Header.Get("Mcp-Session-Id"); id != "" {
		a.session = id
	}
	if out == nil {
		return nil
	}
	data := a.buf.Bytes()
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		data = lastEvent(a.buf.Bytes())
	}
	return json.Unmarshal(data, out)
}

// lastEvent is the data of the last event of a stream: the answer, which
// ends the response.
func lastEvent(stream []byte) []byte {
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
			last = append(last[:0], d...)
		}
	}
	return last
}

func (a *rawAgent) close() {
	if a.session == "" {
		return
	}
	req, err := http.NewRequest(http.MethodDelete, a.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", a.session)
	if res, err := a.hc.Do(req); err == nil {
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	a.hc.CloseIdleConnections()
}
