package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"minik/client/kubeconfig"
	"minik/internal/freeport"
	"minik/internal/pki"
	"minik/internal/testcluster"
)

// startProcess runs the minik binary with args until the test ends.
func startProcess(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	var log bytes.Buffer
	cmd := exec.Command(testcluster.Binary(t), args...)
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	return cmd, &log
}

// TestThreeMemberEtcdClusterBehindTheAPIServer forms a cluster from three
// `minik etcd` members, TLS between peers and to clients with client
// certificates (each member sees only etcd's CA certificate and its own
// key, as in the compose cluster), and runs `minik apiserver
// --etcd-servers --etcd-cafile --etcd-certfile --etcd-keyfile` on it; the
// cluster keeps serving writes after one member is stopped.
func TestThreeMemberEtcdClusterBehindTheAPIServer(t *testing.T) {
	dir := t.TempDir()
	pkiDir := filepath.Join(dir, "pki")
	etcdCA, err := pki.EnsureEtcdCA(pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	etcdClient, err := pki.EnsureAPIServerEtcdClient(pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	ports := make([][2]string, 3)
	for i := range ports {
		ports[i] = [2]string{freePort(t), freePort(t)}
	}
	var initial []string
	for i, p := range ports {
		initial = append(initial, fmt.Sprintf("m%d=https://127.0.0.1:%s", i, p[1]))
	}
	var members []*exec.Cmd
	var clientURLs []string
	for i, p := range ports {
		name := fmt.Sprintf("m%d", i)
		memberPKI := filepath.Join(dir, name+"-pki")
		if _, err := pki.IssueEtcdMember(etcdCA, memberPKI, name, nil); err != nil {
			t.Fatal(err)
		}
		cmd, _ := startProcess(t, "etcd", "--name", name, "--data-dir", filepath.Join(dir, name), "--pki-dir", memberPKI,
			"--listen-client-urls", "https://127.0.0.1:"+p[0], "--listen-peer-urls", "https://127.0.0.1:"+p[1],
			"--initial-advertise-peer-urls", "https://127.0.0.1:"+p[1], "--initial-cluster", strings.Join(initial, ","))
		members = append(members, cmd)
		clientURLs = append(clientURLs, "https://127.0.0.1:"+p[0])
	}

	ca, err := pki.EnsureCA(pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.EnsureServing(pkiDir, "apiserver", nil)
	if err != nil {
		t.Fatal(err)
	}
	adminCert, adminKey, err := ca.EnsureClient(pkiDir, "admin", pki.AdminUser, []string{pki.MastersGroup})
	if err != nil {
		t.Fatal(err)
	}
	listen := "127.0.0.1:" + freePort(t)
	certPEM, _ := os.ReadFile(adminCert)
	keyPEM, _ := os.ReadFile(adminKey)
	kcPath := filepath.Join(dir, "admin.kubeconfig")
	if err := kubeconfig.Write(kcPath, "https://"+listen, ca.CertPEM(), certPEM, keyPEM, pki.AdminUser); err != nil {
		t.Fatal(err)
	}
	_, apiLog := startProcess(t, "apiserver", "--etcd-servers", strings.Join(clientURLs, ","), "--listen", listen,
		"--etcd-cafile", etcdClient.CA, "--etcd-certfile", etcdClient.Cert, "--etcd-keyfile", etcdClient.Key,
		"--tls-cert-file", cert, "--tls-private-key-file", key, "--client-ca-file", filepath.Join(pkiDir, "ca.crt"),
		"--request-timeout", "5s")
	waitHealthy(t, "https://"+listen+"/readyz", apiLog)

	cfg, err := clientcmd.BuildConfigFromFlags("", kcPath)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	create := func(name string) error {
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}
	if err := create("before"); err != nil {
		t.Fatalf("write to the 3-member cluster: %v", err)
	}
	// Stop one member: two of three are still a quorum.
	_ = members[2].Process.Signal(os.Interrupt)
	_, _ = members[2].Process.Wait()
	var lastErr error
	for i := 0; i < 50; i++ {
		if lastErr = create(fmt.Sprintf("after-%d", i)); lastErr == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if lastErr != nil {
		t.Fatalf("write after losing one member: %v", lastErr)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "before", metav1.GetOptions{}); err != nil {
		t.Fatalf("read after losing one member: %v", err)
	}
	// Stop a second: no quorum. A write gets the apiserver's error Status
	// within its request timeout (5s here), never a hang.
	_ = members[1].Process.Signal(os.Interrupt)
	_, _ = members[1].Process.Wait()
	begin := time.Now()
	err = create("without-quorum")
	took := time.Since(begin)
	if _, isStatus := err.(apierrors.APIStatus); !isStatus || took > 12*time.Second {
		t.Fatalf("a write without quorum: %v after %v, want the apiserver's Status within its 5s request timeout\n%s", err, took, apiLog.String())
	}
	t.Logf("a write without quorum: %v after %v", err, took.Round(100*time.Millisecond))
}

// TestKilledProcessLosesNoAcknowledgedWrite kills minik up with SIGKILL
// right after a burst of acknowledged creates and checks them all after
// a restart.
func TestKilledProcessLosesNoAcknowledgedWrite(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	cs := c.Clientset()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 100
	for i := 0; i < n; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("acked-%d", i)}}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.Kill()
	c.Restart()
	list, err := c.Clientset().CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != n {
		t.Fatalf("%d of %d acknowledged objects survived SIGKILL", len(list.Items), n)
	}
}

func waitHealthy(t *testing.T, url string, log *bytes.Buffer) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: time.Second}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
	}
	t.Fatalf("%s never became healthy:\n%s", url, log.String())
}

func freePort(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	return port
}
