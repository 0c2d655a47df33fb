package jaegertest

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStart_Listens_LoopbackOnly proves Invariant 1 on the running process:
// every socket Jaeger listens on (TCP) or is bound to (UDP) is on
// 127.0.0.1, and it stops within a second of SIGTERM (self-tracing off).
func TestStart_Listens_LoopbackOnly(t *testing.T) {
	j := Start(t)
	pid := j.cmd.Process.Pid
	socks, err := listeningSockets(pid)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{j.otlpHTTP: true, j.otlpGRPC: true, j.queryHTTP: true}
	for _, s := range socks {
		t.Logf("listening: %s", s)
		host, _, _ := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(s, "tcp "), "udp "))
		if host != "127.0.0.1" {
			t.Errorf("Jaeger listens on %s, not on loopback", s)
		}
		delete(want, strings.TrimPrefix(s, "tcp "))
	}
	if len(socks) == 0 || len(want) > 0 {
		t.Errorf("sockets %v; missing %v", socks, want)
	}

	began := time.Now()
	if err := j.stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("Jaeger took %v to stop; is its self-tracing on?", took)
	}
}

// listeningSockets returns "tcp ADDR" for each TCP socket of pid in LISTEN
// state and "udp ADDR" for each UDP socket, from /proc.
func listeningSockets(pid int) ([]string, error) {
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, table := range []string{"tcp", "tcp6", "udp", "udp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || !inodes[fields[9]] {
				continue
			}
			proto := table[:3]
			if proto == "tcp" && fields[3] != "0A" { // LISTEN
				continue
			}
			addr, err := procAddr(fields[1])
			if err != nil {
				f.Close()
				return nil, err
			}
			out = append(out, proto+" "+addr)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// procAddr decodes /proc/net's "0100007F:1F90" (IPv4 or IPv6 as 32-bit
// words in host order — little endian here — then a hex port).
func procAddr(s string) (string, error) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return "", fmt.Errorf("bad address %q", s)
	}
	raw, err := hex.DecodeString(ipHex)
	if err != nil {
		return "", err
	}
	ip := make(net.IP, len(raw))
	for i := 0; i+4 <= len(raw); i += 4 { // each 32-bit word is little endian
		ip[i], ip[i+1], ip[i+2], ip[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return "", err
	}
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	return net.JoinHostPort(ip.String(), strconv.FormatUint(port, 10)), nil
}

func TestProcAddr_Decode(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000:0016":                         "0.0.0.0:22",
		"00000000000000000000000001000000:0050": "[::1]:80",
		"0000000000000000FFFF00000100007F:0050": "127.0.0.1:80",
	} {
		if got, err := procAddr(in); err != nil || got != want {
			t.Errorf("procAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
