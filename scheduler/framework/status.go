package framework

import (
	"errors"
	"strings"
)

// Code is the outcome of running a plugin.
type Code int

// The codes a plugin returns. A nil *Status means Success.
const (
	// Success: the node passes, or the plugin has nothing to say.
	Success Code = iota
	// Error: something went wrong that is not the pod's or node's fault.
	Error
	// Unschedulable: the pod does not fit the node now, but preemption
	// (removing lower-priority pods) might make it fit.
	Unschedulable
	// UnschedulableAndUnresolvable: the pod does not fit the node, and
	// removing pods cannot change that (a taint, a label, a node name).
	// Preemption skips such nodes.
	UnschedulableAndUnresolvable
	// Skip: from PreFilter or PreScore, the plugin has nothing to do for
	// this pod; its Filter or Score is then not called.
	Skip
)

var codeNames = []string{"Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Skip"}

func (c Code) String() string { return codeNames[c] }

// Status is a plugin's verdict: a code, the reasons a user reads, and the
// plugin that gave it. A nil *Status is a success.
type Status struct {
	code    Code
	reasons []string
	detail  string
	err     error
	plugin  string
}

// NewStatus returns a status with code and reasons.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps err in a status with code Error.
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

// Code returns the status's code; Success for a nil status.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// Reasons returns the user-facing reasons, e.g. "Insufficient cpu".
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// Message joins the reasons with ", ".
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.reasons, ", ")
}

// WithDetail adds what minik explain shows besides the reasons, which
// read as upstream's: "node(s) had untolerated taint(s)" names no taint,
// its detail "dedicated=gpu:NoSchedule" does. It returns s.
func (s *Status) WithDetail(detail string) *Status {
	if s != nil {
		s.detail = detail
	}
	return s
}

// Detail returns the explanation's detail, or "".
func (s *Status) Detail() string {
	if s == nil {
		return ""
	}
	return s.detail
}

// Plugin returns the name of the plugin that produced the status.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records which plugin produced s and returns s.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil {
		s.plugin = name
	}
	return s
}

// IsSuccess reports whether s is nil or has code Success.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsSkip reports whether s has code Skip.
func (s *Status) IsSkip() bool { return s.Code() == Skip }

// IsRejected reports whether the pod was rejected (either Unschedulable code).
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}

// AsError returns nil for a success or a rejection, and an error otherwise.
func (s *Status) AsError() error {
	if s.Code() != Error {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return errors.New(s.Message())
}

func (s *Status) String() string {
	if s == nil {
		return "Success"
	}
	if len(s.reasons) == 0 {
		return s.code.String()
	}
	return s.code.String() + ": " + s.Message()
}
