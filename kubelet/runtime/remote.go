package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"minik/proto/cri"
)

// Remote is a Runtime reached over the mini-CRI gRPC socket.
type Remote struct {
	conn *grpc.ClientConn
	rs   cri.RuntimeServiceClient
	is   cri.ImageServiceClient
}

var _ Runtime = &Remote{}

// Dial connects to the mini-CRI socket at path (a unix socket).
func Dial(path string) (*Remote, error) {
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		return nil, fmt.Errorf("dialing the runtime at %s: %w", path, err)
	}
	return &Remote{conn: conn, rs: cri.NewRuntimeServiceClient(conn), is: cri.NewImageServiceClient(conn)}, nil
}

// Close closes the connection.
func (r *Remote) Close() error { return r.conn.Close() }

func (r *Remote) Version(ctx context.Context) (*cri.VersionResponse, error) {
	v, err := r.rs.Version(ctx, &cri.VersionRequest{})
	return v, fromStatus(err)
}

func (r *Remote) UpdatePodCIDR(ctx context.Context, cidr string) error {
	_, err := r.rs.UpdateRuntimeConfig(ctx, &cri.UpdateRuntimeConfigRequest{PodCidr: cidr})
	return fromStatus(err)
}

func (r *Remote) RunPodSandbox(ctx context.Context, cfg *cri.PodSandboxConfig) (string, error) {
	resp, err := r.rs.RunPodSandbox(ctx, &cri.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		return "", fromStatus(err)
	}
	return resp.PodSandboxId, nil
}

func (r *Remote) StopPodSandbox(ctx context.Context, id string) error {
	_, err := r.rs.StopPodSandbox(ctx, &cri.StopPodSandboxRequest{PodSandboxId: id})
	return fromStatus(err)
}

func (r *Remote) RemovePodSandbox(ctx context.Context, id string) error {
	_, err := r.rs.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: id})
	return fromStatus(err)
}

func (r *Remote) ListPodSandbox(ctx context.Context, podUID string) ([]*cri.PodSandbox, error) {
	resp, err := r.rs.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{PodUid: podUID})
	if err != nil {
		return nil, fromStatus(err)
	}
	return resp.Items, nil
}

func (r *Remote) CreateContainer(ctx context.Context, sandboxID string, cfg *cri.ContainerConfig, sandbox *cri.PodSandboxConfig) (string, error) {
	resp, err := r.rs.CreateContainer(ctx, &cri.CreateContainerRequest{PodSandboxId: sandboxID, Config: cfg, SandboxConfig: sandbox})
	if err != nil {
		return "", fromStatus(err)
	}
	return resp.ContainerId, nil
}

func (r *Remote) StartContainer(ctx context.Context, id string) error {
	_, err := r.rs.StartContainer(ctx, &cri.StartContainerRequest{ContainerId: id})
	return fromStatus(err)
}

func (r *Remote) StopContainer(ctx context.Context, id string, timeout int64) error {
	_, err := r.rs.StopContainer(ctx, &cri.StopContainerRequest{ContainerId: id, Timeout: timeout})
	return fromStatus(err)
}

func (r *Remote) RemoveContainer(ctx context.Context, id string) error {
	_, err := r.rs.RemoveContainer(ctx, &cri.RemoveContainerRequest{ContainerId: id})
	return fromStatus(err)
}

func (r *Remote) ListContainers(ctx context.Context, sandboxID string) ([]*cri.Container, error) {
	resp, err := r.rs.ListContainers(ctx, &cri.ListContainersRequest{PodSandboxId: sandboxID})
	if err != nil {
		return nil, fromStatus(err)
	}
	return resp.Containers, nil
}

func (r *Remote) ContainerStatus(ctx context.Context, id string) (*cri.ContainerStatus, error) {
	resp, err := r.rs.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return nil, fromStatus(err)
	}
	return resp.Status, nil
}

// ListContainerStatuses implements ContainerStatusLister: one call over
// the socket instead of a listing and a call per container. A server
// without it (Unimplemented) is asked the old way.
func (r *Remote) ListContainerStatuses(ctx context.Context, sandboxID string) ([]*cri.ContainerStatus, error) {
	resp, err := r.rs.ListContainerStatuses(ctx, &cri.ListContainersRequest{PodSandboxId: sandboxID})
	if status.Code(err) == codes.Unimplemented {
		return containerStatusesOneByOne(ctx, r, sandboxID)
	}
	if err != nil {
		return nil, fromStatus(err)
	}
	return resp.Statuses, nil
}

var _ ContainerStatusLister = &Remote{}

func (r *Remote) ExecSync(ctx context.Context, id string, cmd []string, timeout int64) (*cri.ExecSyncResponse, error) {
	resp, err := r.rs.ExecSync(ctx, &cri.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: timeout})
	return resp, fromStatus(err)
}

func (r *Remote) PortForward(ctx context.Context, sandboxID string, port int32, rw io.ReadWriter) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the input goroutine and, on the server, the connection
	stream, err := r.rs.PortForward(ctx)
	if err != nil {
		return fromStatus(err)
	}
	if err := stream.Send(&cri.PortForwardInput{PodSandboxId: sandboxID, Port: port}); err != nil {
		return fromStatus(err)
	}
	go func() {
		// gRPC allows one Send at a time: only this goroutine sends now.
		buf := make([]byte, 32*1024)
		for {
			n, err := rw.Read(buf)
			if n > 0 && stream.Send(&cri.PortForwardInput{Data: append([]byte(nil), buf[:n]...)}) != nil {
				return
			}
			if err != nil {
				_ = stream.Send(&cri.PortForwardInput{CloseWrite: true})
				return
			}
		}
	}()
	for {
		out, err := stream.Recv()
		if err == io.EOF {
			return nil // the port closed its side
		}
		if err != nil {
			return fromStatus(err)
		}
		if _, err := rw.Write(out.Data); err != nil {
			return err
		}
	}
}

func (r *Remote) Exec(ctx context.Context, id string, opts ExecOptions) (int32, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the input goroutines and, on the server, the command
	stream, err := r.rs.Exec(ctx)
	if err != nil {
		return 0, fromStatus(err)
	}
	start := &cri.ExecStart{ContainerId: id, Cmd: opts.Cmd, Tty: opts.TTY, Stdin: opts.Stdin != nil}
	return streamIO(ctx, stream, start, opts)
}

func (r *Remote) Attach(ctx context.Context, id string, opts ExecOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := r.rs.Attach(ctx)
	if err != nil {
		return fromStatus(err)
	}
	_, err = streamIO(ctx, stream, &cri.ExecStart{ContainerId: id, Stdin: opts.Stdin != nil}, opts)
	return err
}

// streamIO plays the client's side of an Exec or Attach stream: the
// start, then input and terminal sizes; output until the exit.
func streamIO(ctx context.Context, stream grpc.BidiStreamingClient[cri.ExecInput, cri.ExecOutput], start *cri.ExecStart, opts ExecOptions) (int32, error) {
	var sendMu sync.Mutex
	send := func(in *cri.ExecInput) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(in)
	}
	if err := send(&cri.ExecInput{Start: start}); err != nil {
		return 0, fromStatus(err)
	}
	if opts.Stdin != nil {
		go func() {
			buf := make([]byte, 32*1024)
			for {
				n, err := opts.Stdin.Read(buf)
				if n > 0 && send(&cri.ExecInput{Stdin: append([]byte(nil), buf[:n]...)}) != nil {
					return
				}
				if err != nil {
					_ = send(&cri.ExecInput{StdinClose: true})
					return
				}
			}
		}()
	}
	if opts.Resize != nil {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case sz, ok := <-opts.Resize:
					if !ok || send(&cri.ExecInput{Resize: &cri.TerminalSize{Width: uint32(sz.Width), Height: uint32(sz.Height)}}) != nil {
						return
					}
				}
			}
		}()
	}
	for {
		out, err := stream.Recv()
		if err != nil {
			if err == io.EOF {
				err = errors.New("exec: the runtime ended the stream without an exit code")
			}
			return 0, fromStatus(err)
		}
		if len(out.Stdout) > 0 && opts.Stdout != nil {
			if _, err := opts.Stdout.Write(out.Stdout); err != nil {
				return 0, err
			}
		}
		if len(out.Stderr) > 0 && opts.Stderr != nil {
			if _, err := opts.Stderr.Write(out.Stderr); err != nil {
				return 0, err
			}
		}
		if out.Exited {
			return out.ExitCode, nil
		}
	}
}

func (r *Remote) ReadLog(ctx context.Context, req *cri.ReadLogRequest, w io.Writer) error {
	stream, err := r.rs.ReadLog(ctx, req)
	if err != nil {
		return fromStatus(err)
	}
	for {
		chunk, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fromStatus(err)
		}
		if _, err := w.Write(chunk.Data); err != nil {
			return err
		}
	}
}

func (r *Remote) ListContainerStats(ctx context.Context) ([]*cri.ContainerStats, error) {
	resp, err := r.rs.ListContainerStats(ctx, &cri.ListContainerStatsRequest{})
	if err != nil {
		return nil, fromStatus(err)
	}
	return resp.Stats, nil
}

// subscribedHeader is the header the server sends once it is subscribed
// to the runtime's events.
const subscribedHeader = "minik-subscribed"

// GetContainerEvents returns once the server has subscribed (it sends its
// headers then), so that no change after it is missed.
func (r *Remote) GetContainerEvents(ctx context.Context) (ContainerEventStream, error) {
	stream, err := r.rs.GetContainerEvents(ctx, &cri.GetEventsRequest{})
	if err != nil {
		return nil, fromStatus(err)
	}
	md, err := stream.Header()
	if err == nil && len(md.Get(subscribedHeader)) == 0 {
		// Headers without the mark: the call ended before subscribing
		// (an older server answers Unimplemented); Recv has the error.
		_, err = stream.Recv()
		if err == nil || err == io.EOF {
			err = errors.New("the runtime ended the event stream before subscribing")
		}
	}
	if err != nil {
		return nil, fromStatus(err)
	}
	return remoteEvents{stream}, nil
}

type remoteEvents struct {
	s cri.RuntimeService_GetContainerEventsClient
}

func (e remoteEvents) Recv() (*cri.ContainerEventResponse, error) {
	ev, err := e.s.Recv()
	if err == io.EOF {
		err = errors.New("the runtime ended the event stream")
	}
	return ev, fromStatus(err)
}

func (r *Remote) ListImages(ctx context.Context) ([]*cri.Image, error) {
	resp, err := r.is.ListImages(ctx, &cri.ListImagesRequest{})
	if err != nil {
		return nil, fromStatus(err)
	}
	return resp.Images, nil
}

func (r *Remote) ImageStatus(ctx context.Context, ref string) (*cri.Image, error) {
	resp, err := r.is.ImageStatus(ctx, &cri.ImageStatusRequest{Image: &cri.ImageSpec{Image: ref}})
	if err != nil {
		return nil, fromStatus(err)
	}
	return resp.Image, nil
}

func (r *Remote) PullImage(ctx context.Context, ref string, insecure bool) (string, error) {
	resp, err := r.is.PullImage(ctx, &cri.PullImageRequest{Image: &cri.ImageSpec{Image: ref}, Insecure: insecure})
	if err != nil {
		return "", fromStatus(err)
	}
	return resp.ImageRef, nil
}

func (r *Remote) RemoveImage(ctx context.Context, ref string) error {
	_, err := r.is.RemoveImage(ctx, &cri.RemoveImageRequest{Image: &cri.ImageSpec{Image: ref}})
	return fromStatus(err)
}

// Serve serves rt over the mini-CRI on l until ctx ends.
func Serve(ctx context.Context, l net.Listener, rt Runtime) error {
	s := grpc.NewServer(grpc.MaxSendMsgSize(16 << 20))
	srv := &server{rt: rt}
	cri.RegisterRuntimeServiceServer(s, srv)
	cri.RegisterImageServiceServer(s, srv)
	go func() { <-ctx.Done(); s.Stop() }()
	if err := s.Serve(l); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// server adapts a Runtime to the generated gRPC server interfaces.
type server struct {
	cri.UnimplementedRuntimeServiceServer
	cri.UnimplementedImageServiceServer
	rt Runtime
}

func (s *server) Version(ctx context.Context, _ *cri.VersionRequest) (*cri.VersionResponse, error) {
	v, err := s.rt.Version(ctx)
	return v, toStatus(err)
}

func (s *server) UpdateRuntimeConfig(ctx context.Context, req *cri.UpdateRuntimeConfigRequest) (*cri.UpdateRuntimeConfigResponse, error) {
	return &cri.UpdateRuntimeConfigResponse{}, toStatus(s.rt.UpdatePodCIDR(ctx, req.PodCidr))
}

func (s *server) RunPodSandbox(ctx context.Context, req *cri.RunPodSandboxRequest) (*cri.RunPodSandboxResponse, error) {
	id, err := s.rt.RunPodSandbox(ctx, req.Config)
	return &cri.RunPodSandboxResponse{PodSandboxId: id}, toStatus(err)
}

func (s *server) StopPodSandbox(ctx context.Context, req *cri.StopPodSandboxRequest) (*cri.StopPodSandboxResponse, error) {
	return &cri.StopPodSandboxResponse{}, toStatus(s.rt.StopPodSandbox(ctx, req.PodSandboxId))
}

func (s *server) RemovePodSandbox(ctx context.Context, req *cri.RemovePodSandboxRequest) (*cri.RemovePodSandboxResponse, error) {
	return &cri.RemovePodSandboxResponse{}, toStatus(s.rt.RemovePodSandbox(ctx, req.PodSandboxId))
}

func (s *server) ListPodSandbox(ctx context.Context, req *cri.ListPodSandboxRequest) (*cri.ListPodSandboxResponse, error) {
	items, err := s.rt.ListPodSandbox(ctx, req.PodUid)
	return &cri.ListPodSandboxResponse{Items: items}, toStatus(err)
}

func (s *server) CreateContainer(ctx context.Context, req *cri.CreateContainerRequest) (*cri.CreateContainerResponse, error) {
	id, err := s.rt.CreateContainer(ctx, req.PodSandboxId, req.Config, req.SandboxConfig)
	return &cri.CreateContainerResponse{ContainerId: id}, toStatus(err)
}

func (s *server) StartContainer(ctx context.Context, req *cri.StartContainerRequest) (*cri.StartContainerResponse, error) {
	return &cri.StartContainerResponse{}, toStatus(s.rt.StartContainer(ctx, req.ContainerId))
}

func (s *server) StopContainer(ctx context.Context, req *cri.StopContainerRequest) (*cri.StopContainerResponse, error) {
	return &cri.StopContainerResponse{}, toStatus(s.rt.StopContainer(ctx, req.ContainerId, req.Timeout))
}

func (s *server) RemoveContainer(ctx context.Context, req *cri.RemoveContainerRequest) (*cri.RemoveContainerResponse, error) {
	return &cri.RemoveContainerResponse{}, toStatus(s.rt.RemoveContainer(ctx, req.ContainerId))
}

func (s *server) ListContainers(ctx context.Context, req *cri.ListContainersRequest) (*cri.ListContainersResponse, error) {
	cs, err := s.rt.ListContainers(ctx, req.PodSandboxId)
	return &cri.ListContainersResponse{Containers: cs}, toStatus(err)
}

func (s *server) ContainerStatus(ctx context.Context, req *cri.ContainerStatusRequest) (*cri.ContainerStatusResponse, error) {
	st, err := s.rt.ContainerStatus(ctx, req.ContainerId)
	return &cri.ContainerStatusResponse{Status: st}, toStatus(err)
}

func (s *server) ListContainerStatuses(ctx context.Context, req *cri.ListContainersRequest) (*cri.ListContainerStatusesResponse, error) {
	sts, err := ContainerStatuses(ctx, s.rt, req.PodSandboxId)
	return &cri.ListContainerStatusesResponse{Statuses: sts}, toStatus(err)
}

func (s *server) ExecSync(ctx context.Context, req *cri.ExecSyncRequest) (*cri.ExecSyncResponse, error) {
	resp, err := s.rt.ExecSync(ctx, req.ContainerId, req.Cmd, req.Timeout)
	return resp, toStatus(err)
}

func (s *server) Exec(stream cri.RuntimeService_ExecServer) error {
	return s.serveIO(stream, func(ctx context.Context, start *cri.ExecStart, opts ExecOptions) (int32, error) {
		return s.rt.Exec(ctx, start.ContainerId, opts)
	})
}

func (s *server) Attach(stream cri.RuntimeService_AttachServer) error {
	return s.serveIO(stream, func(ctx context.Context, start *cri.ExecStart, opts ExecOptions) (int32, error) {
		return 0, s.rt.Attach(ctx, start.ContainerId, opts)
	})
}

// serveIO plays the server's side of an Exec or Attach stream around run.
func (s *server) serveIO(stream grpc.BidiStreamingServer[cri.ExecInput, cri.ExecOutput], run func(context.Context, *cri.ExecStart, ExecOptions) (int32, error)) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return errors.New("exec: the first message must be the start")
	}
	var sendMu sync.Mutex
	send := func(out *cri.ExecOutput) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(out)
	}
	opts := ExecOptions{Cmd: start.Cmd, TTY: start.Tty,
		Stdout: writerFunc(func(p []byte) error { return send(&cri.ExecOutput{Stdout: append([]byte(nil), p...)}) }),
		Stderr: writerFunc(func(p []byte) error { return send(&cri.ExecOutput{Stderr: append([]byte(nil), p...)}) }),
	}
	var stdin *io.PipeWriter
	if start.Stdin {
		var r *io.PipeReader
		r, stdin = io.Pipe()
		defer r.Close() // unblocks the input loop if the command stopped reading
		opts.Stdin = r
	}
	resize := make(chan TerminalSize, 4)
	opts.Resize = resize
	go func() {
		for {
			in, err := stream.Recv()
			if err != nil {
				if stdin != nil {
					stdin.CloseWithError(err)
				}
				return
			}
			if stdin != nil && len(in.Stdin) > 0 {
				if _, err := stdin.Write(in.Stdin); err != nil {
					stdin = nil
				}
			}
			if stdin != nil && in.StdinClose {
				stdin.Close()
				stdin = nil
			}
			if sz := in.GetResize(); sz != nil {
				select {
				case resize <- TerminalSize{Width: uint16(sz.Width), Height: uint16(sz.Height)}:
				default: // a newer size follows
				}
			}
		}
	}()
	code, err := run(stream.Context(), start, opts)
	if err != nil {
		return toStatus(err)
	}
	return send(&cri.ExecOutput{Exited: true, ExitCode: code})
}

func (s *server) PortForward(stream cri.RuntimeService_PortForwardServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	if first.PodSandboxId == "" {
		return status.Error(codes.InvalidArgument, "port-forward: the first message must name the sandbox and port")
	}
	in, inw := io.Pipe()
	defer in.Close() // unblocks the input loop once the port closed
	go func() {
		for {
			msg, err := stream.Recv()
			if err != nil {
				inw.CloseWithError(err)
				return
			}
			if len(msg.Data) > 0 {
				if _, err := inw.Write(msg.Data); err != nil {
					return
				}
			}
			if msg.CloseWrite {
				inw.Close()
				return
			}
		}
	}()
	out := writerFunc(func(p []byte) error { return stream.Send(&cri.PortForwardOutput{Data: append([]byte(nil), p...)}) })
	return toStatus(s.rt.PortForward(stream.Context(), first.PodSandboxId, first.Port, readWriter{in, out}))
}

// readWriter joins a reader and a writer.
type readWriter struct {
	io.Reader
	io.Writer
}

// writerFunc adapts a function to io.Writer.
type writerFunc func(p []byte) error

func (f writerFunc) Write(p []byte) (int, error) {
	if err := f(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *server) ReadLog(req *cri.ReadLogRequest, stream cri.RuntimeService_ReadLogServer) error {
	return toStatus(s.rt.ReadLog(stream.Context(), req, streamWriter{stream}))
}

type streamWriter struct {
	s cri.RuntimeService_ReadLogServer
}

func (w streamWriter) Write(p []byte) (int, error) {
	if err := w.s.Send(&cri.LogChunk{Data: append([]byte(nil), p...)}); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *server) ListContainerStats(ctx context.Context, _ *cri.ListContainerStatsRequest) (*cri.ListContainerStatsResponse, error) {
	stats, err := s.rt.ListContainerStats(ctx)
	return &cri.ListContainerStatsResponse{Stats: stats}, toStatus(err)
}

func (s *server) GetContainerEvents(_ *cri.GetEventsRequest, stream cri.RuntimeService_GetContainerEventsServer) error {
	events, err := s.rt.GetContainerEvents(stream.Context())
	if err != nil {
		return toStatus(err)
	}
	if err := stream.SendHeader(metadata.Pairs(subscribedHeader, "true")); err != nil {
		return err
	}
	for {
		ev, err := events.Recv()
		if err != nil {
			return toStatus(err)
		}
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
}

func (s *server) ListImages(ctx context.Context, _ *cri.ListImagesRequest) (*cri.ListImagesResponse, error) {
	imgs, err := s.rt.ListImages(ctx)
	return &cri.ListImagesResponse{Images: imgs}, toStatus(err)
}

func (s *server) ImageStatus(ctx context.Context, req *cri.ImageStatusRequest) (*cri.ImageStatusResponse, error) {
	img, err := s.rt.ImageStatus(ctx, req.GetImage().GetImage())
	return &cri.ImageStatusResponse{Image: img}, toStatus(err)
}

func (s *server) PullImage(ctx context.Context, req *cri.PullImageRequest) (*cri.PullImageResponse, error) {
	ref, err := s.rt.PullImage(ctx, req.GetImage().GetImage(), req.Insecure)
	return &cri.PullImageResponse{ImageRef: ref}, toStatus(err)
}

func (s *server) RemoveImage(ctx context.Context, req *cri.RemoveImageRequest) (*cri.RemoveImageResponse, error) {
	return &cri.RemoveImageResponse{}, toStatus(s.rt.RemoveImage(ctx, req.GetImage().GetImage()))
}
