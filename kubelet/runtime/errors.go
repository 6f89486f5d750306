package runtime

import (
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Errors a Runtime returns, wrapped. They cross the gRPC socket as status
// codes and come back as the same values.
var (
	ErrNotFound = errors.New("not found")
	// ErrImageNotFound: the image is not present and cannot be pulled
	// from anywhere.
	ErrImageNotFound = errors.New("image not found")
	// ErrInvalidImageName: the reference cannot be parsed.
	ErrInvalidImageName = errors.New("invalid image name")
)

func toStatus(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, ErrImageNotFound):
		return status.Error(codes.FailedPrecondition, "image not found: "+err.Error())
	case errors.Is(err, ErrInvalidImageName):
		return status.Error(codes.InvalidArgument, "invalid image name: "+err.Error())
	case errors.Is(err, ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codes.Unknown, err.Error())
}

type wrapped struct {
	msg  string
	base error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.base }

func fromStatus(err error) error {
	if err == nil {
		return nil
	}
	s, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch s.Code() {
	case codes.NotFound:
		return &wrapped{s.Message(), ErrNotFound}
	case codes.FailedPrecondition:
		return &wrapped{s.Message(), ErrImageNotFound}
	case codes.InvalidArgument:
		return &wrapped{s.Message(), ErrInvalidImageName}
	}
	return errors.New(s.Message())
}
