package synctest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"

	"minik/client"
)

// Reads answers a driver's live reads (discovery, lists, a scale) from
// canned objects by URL path, without an apiserver: a GET of a path it
// holds gets the object as JSON, any other request a NotFound Status. An
// aggregated discovery list is answered with its own media type, as an
// apiserver answers a client that asks for it.
type Reads map[string]any

// RoundTrip answers req from r.
func (r Reads) RoundTrip(req *http.Request) (*http.Response, error) {
	body, code := []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`), http.StatusNotFound
	contentType := "application/json"
	if obj, ok := r[req.URL.Path]; ok && req.Method == http.MethodGet {
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		body, code = b, http.StatusOK
		if _, aggregated := obj.(*apidiscoveryv2.APIGroupDiscoveryList); aggregated {
			contentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
		}
	}
	return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {contentType}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: req}, nil
}

// Client returns a client whose requests r answers.
func (r Reads) Client() *client.Client {
	c, err := client.New(client.Config{Host: "http://apiserver.invalid", Transport: r})
	if err != nil {
		panic(err) // the host is a valid URL
	}
	return c
}
