package zabbixtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

var apiClient = &http.Client{Timeout: 60 * time.Second}

// Call invokes a JSON-RPC method of the frontend API and decodes its
// result into out (when not nil). The first call logs in as the default
// Admin.
func (s *Server) Call(method string, params, out any) error {
	if s.apiToken == "" && method != "user.login" && method != "apiinfo.version" {
		var tok string
		if err := s.Call("user.login", map[string]string{"username": "Admin", "password": "zabbix"}, &tok); err != nil {
			return fmt.Errorf("login: %w", err)
		}
		s.apiToken = tok
	}
	req := map[string]any{"jsonrpc": "2.0", "method": method, "params": params, "id": 1}
	if s.apiToken != "" && method != "user.login" && method != "apiinfo.version" {
		req["auth"] = s.apiToken
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	resp, err := apiClient.Post(s.APIURL, "application/json-rpc", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	var rpc struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    string `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &rpc); err != nil {
		return fmt.Errorf("%s: HTTP %d, not JSON-RPC: %.300s", method, resp.StatusCode, data)
	}
	if rpc.Error != nil {
		return fmt.Errorf("%s: %d %s %s", method, rpc.Error.Code, rpc.Error.Message, rpc.Error.Data)
	}
	if out != nil {
		return json.Unmarshal(rpc.Result, out)
	}
	return nil
}

// MustCall is Call that fails the test.
func (s *Server) MustCall(method string, params, out any) {
	s.t.Helper()
	if err := s.Call(method, params, out); err != nil {
		s.t.Fatalf("zabbixtest: %v", err)
	}
}

// ImportTemplate imports a YAML export file (templates, items, discovery
// rules, triggers, value maps), as a user would in the frontend.
func (s *Server) ImportTemplate(path string) {
	s.t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatal(err)
	}
	both := map[string]bool{"createMissing": true, "updateExisting": true}
	rules := map[string]any{
		"groups":         map[string]bool{"createMissing": true},
		"templates":      both,
		"items":          both,
		"discoveryRules": both,
		"triggers":       both,
		"valueMaps":      both,
		"graphs":         both,
	}
	s.MustCall("configuration.import", map[string]any{"format": "yaml", "source": string(src), "rules": rules}, nil)
}

// CreateHost creates a host in group "Linux servers" linked to the
// template named template, and returns its id.
func (s *Server) CreateHost(name, template string) string {
	s.t.Helper()
	var tpls []struct {
		ID string `json:"templateid"`
	}
	s.MustCall("template.get", map[string]any{"filter": map[string]any{"host": []string{template}}, "output": []string{"templateid"}}, &tpls)
	if len(tpls) != 1 {
		s.t.Fatalf("zabbixtest: template %q not found", template)
	}
	var groups []struct {
		ID string `json:"groupid"`
	}
	s.MustCall("hostgroup.get", map[string]any{"filter": map[string]any{"name": []string{"Linux servers"}}, "output": []string{"groupid"}}, &groups)
	if len(groups) != 1 {
		s.t.Fatal("zabbixtest: host group Linux servers not found")
	}
	var res struct {
		IDs []string `json:"hostids"`
	}
	s.MustCall("host.create", map[string]any{"host": name, "groups": []map[string]string{{"groupid": groups[0].ID}},
		"templates": []map[string]string{{"templateid": tpls[0].ID}}}, &res)
	if len(res.IDs) != 1 {
		s.t.Fatal("zabbixtest: host.create returned no id")
	}
	return res.IDs[0]
}

// Item is what item.get returns for the fields the tests read.
type Item struct {
	ID        string `json:"itemid"`
	Key       string `json:"key_"`
	ValueType string `json:"value_type"`
	Flags     string `json:"flags"` // 4: created by discovery
	LastValue string `json:"lastvalue"`
}

// Items lists the items of a host.
func (s *Server) Items(hostID string) ([]Item, error) {
	var items []Item
	err := s.Call("item.get", map[string]any{"hostids": []string{hostID},
		"output": []string{"itemid", "key_", "value_type", "flags", "lastvalue"}}, &items)
	return items, err
}

// HistoryValue is one row of history.get.
type HistoryValue struct {
	ItemID string `json:"itemid"`
	Clock  string `json:"clock"`
	Value  string `json:"value"`
}

// History returns the stored values of an item (valueType as item.get
// reports it: 0 float, 1 char, 3 unsigned, 4 text).
func (s *Server) History(itemID, valueType string) ([]HistoryValue, error) {
	var out []HistoryValue
	err := s.Call("history.get", map[string]any{"itemids": []string{itemID}, "history": valueType,
		"output": "extend", "sortfield": "clock", "sortorder": "DESC", "limit": 10}, &out)
	return out, err
}
