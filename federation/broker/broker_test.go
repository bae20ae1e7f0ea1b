package broker_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/parsemcp/parsemcp/federation/broker"
)

// TestCloseDisconnectsClients: Close tells every client still connected
// that the server is shutting down (MQTT v5 reason 0x8B) and returns, also
// while other clients leave on their own at the same moment (mochi-mqtt's
// own Close can deadlock then; Broker.Close says why). A client left
// connected would keep Close waiting: the deadline only bounds that hang.
func TestCloseDisconnectsClients(t *testing.T) {
	const rounds, clients = 10, 16
	for round := range rounds {
		b, err := broker.Start(broker.Options{Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		told := make(chan byte, clients)
		var conns []*paho.Client
		for i := range clients {
			nc, err := net.Dial("tcp", b.Addr())
			if err != nil {
				t.Fatal(err)
			}
			c := paho.NewClient(paho.ClientConfig{
				Conn:               nc,
				OnServerDisconnect: func(d *paho.Disconnect) { told <- d.ReasonCode },
			})
			if _, err := c.Connect(ctx, &paho.Connect{ClientID: fmt.Sprintf("c%d-%d", round, i), CleanStart: true, KeepAlive: 30}); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, c := range conns[:clients/2] {
			wg.Go(func() {
				<-start
				_ = c.Disconnect(&paho.Disconnect{})
			})
		}
		closed := make(chan error, 1)
		close(start)
		go func() { closed <- b.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("round %d: Close: %v", round, err)
			}
		case <-ctx.Done():
			t.Fatalf("round %d: Close did not return", round)
		}
		wg.Wait()
		// The clients that stayed were all told; those that left may or
		// may not have been, depending on who was first.
		for range clients / 2 {
			select {
			case code := <-told:
				if code != 0x8B {
					t.Errorf("round %d: a client was disconnected with reason %#x, want 0x8b (server shutting down)", round, code)
				}
			case <-ctx.Done():
				t.Fatalf("round %d: a client that stayed connected was not told the server is shutting down", round)
			}
		}
		cancel()
	}
}
