package testcluster

import (
	"net"
	"testing"
)

// A port taken between freeAddr and minik up's bind (here: before minik up
// starts) makes startOn move to another port instead of failing the test.
func TestStartMovesOffAPortTakenAfterItWasChosen(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	c := &Cluster{t: t, DataDir: t.TempDir(), Listen: taken.Addr().String()}
	c.startOn("127.0.0.1", []string{"--scheduler=false", "--controller=false"})
	if c.Listen == taken.Addr().String() {
		t.Fatalf("still on the taken address %s", c.Listen)
	}
	if _, err := c.Clientset().Discovery().ServerVersion(); err != nil {
		t.Fatal(err)
	}
}
