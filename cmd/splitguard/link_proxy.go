package main

import (
	"fmt"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/transport/linktest"
)

func init() { subcommands = append(subcommands, newLinkProxyCmd) }

// linkProxyOptions are the flags of `splitguard link-proxy`.
type linkProxyOptions struct {
	Target           string
	RTT              time.Duration
	UpMbit, DownMbit float64
	AddrFile         string
}

func newLinkProxyCmd() *cobra.Command {
	o := linkProxyOptions{}
	cmd := &cobra.Command{
		Use:   "link-proxy --target 127.0.0.1:7443 --rtt 20ms --up 100 --down 100",
		Short: "Emulate a wide-area link between the two parties on one machine: a loopback proxy with delay and bandwidth",
		Long: `link-proxy listens on a free loopback port and forwards every connection to
--target (a loopback address: the active party's --addr) through an emulated link: half
the round trip --rtt each way, and --up (passive → active) and --down (active →
passive) Mbit/s, each direction a wire clocked on its own (transport/linktest). Point the
passive party's --addr at the address it prints, to rehearse a two-process run over a
wide-area link on one machine and compare it with the same run on plain loopback
(docs/methods/wan.md, "Three processes"). It runs until SIGINT or SIGTERM and then
prints how long each direction's wire sat idle.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLinkProxy(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Target, "target", "", "the loopback address to forward to (the active party's --addr)")
	f.DurationVar(&o.RTT, "rtt", 20*time.Millisecond, "round trip time of the emulated link (half of it each way)")
	f.Float64Var(&o.UpMbit, "up", 100, "bandwidth passive → active in Mbit/s (0: unlimited)")
	f.Float64Var(&o.DownMbit, "down", 100, "bandwidth active → passive in Mbit/s (0: unlimited)")
	f.StringVar(&o.AddrFile, "addr-file", "", "also write the address to listen on to this file (for scripts)")
	return cmd
}

// runLinkProxy starts the proxy, prints its address and serves until the
// command's context ends or a signal comes.
func runLinkProxy(cmd *cobra.Command, o linkProxyOptions) error {
	if o.Target == "" {
		return fmt.Errorf("link-proxy: --target is required: the active party's loopback address, e.g. 127.0.0.1:7443")
	}
	if o.RTT < 0 {
		return fmt.Errorf("link-proxy: --rtt %v must not be negative", o.RTT)
	}
	for _, b := range []struct {
		flag string
		v    float64
	}{{"--up", o.UpMbit}, {"--down", o.DownMbit}} {
		if !(b.v >= 0 && b.v <= math.MaxFloat64) {
			return fmt.Errorf("link-proxy: %s %g, want a bandwidth of 0 (unlimited) or more Mbit/s", b.flag, b.v)
		}
	}
	up := linktest.Link{Delay: o.RTT / 2, BytesPerSecond: linktest.Mbit(o.UpMbit)}
	down := linktest.Link{Delay: o.RTT - o.RTT/2, BytesPerSecond: linktest.Mbit(o.DownMbit)}
	px, err := linktest.Start(o.Target, up, down)
	if err != nil {
		return fmt.Errorf("link-proxy: %w (--target must be a loopback address: the proxy emulates a link on one machine)", err)
	}
	defer px.Close()
	if o.AddrFile != "" {
		if err := atomicfile.WriteFile(o.AddrFile, []byte(px.Addr()+"\n"), 0o644); err != nil {
			return fmt.Errorf("link-proxy: --addr-file: %w", err)
		}
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "link-proxy: listening on %s, forwarding to %s: round trip %v, up %s, down %s\n",
		px.Addr(), o.Target, o.RTT, mbit(o.UpMbit), mbit(o.DownMbit))
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	idleUp, idleDown := px.Idle()
	fmt.Fprintf(out, "link-proxy: stopped; the wire sat idle %v up and %v down\n", idleUp.Round(time.Millisecond), idleDown.Round(time.Millisecond))
	return nil
}
