// netdelay: a Unix-socket proxy in front of PostgreSQL that delays every
// chunk of data by a fixed time in each direction, so that a benchmark on
// one machine sees the round trip of a network between machines
// (bench/roundtrip.sh, BENCH_RT_NET_DELAY_US).  Data keeps its order and
// is never held back longer than the delay: a reader stamps each chunk, a
// writer sends it once its time has come.
//
//	netdelay -listen DIR/.s.PGSQL.PORT -to DIR/.s.PGSQL.PORT -delay 100us
package main

import (
	"flag"
	"log"
	"net"
	"os"
	"time"
)

type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst, each chunk delayed by d.
func pipe(src, dst net.Conn, d time.Duration) {
	ch := make(chan chunk, 1024)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 64*1024)
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{buf[:n], time.Now().Add(d)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		if w := time.Until(c.due); w > 0 {
			time.Sleep(w)
		}
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	// the other side is done: end both directions
	src.Close()
	dst.Close()
	for range ch {
	}
}

func main() {
	listen := flag.String("listen", "", "Unix socket to listen on")
	to := flag.String("to", "", "Unix socket of the server")
	delay := flag.Duration("delay", 100*time.Microsecond, "one-way delay")
	flag.Parse()
	if *listen == "" || *to == "" {
		flag.Usage()
		os.Exit(2)
	}
	os.Remove(*listen)
	l, err := net.Listen("unix", *listen)
	if err != nil {
		log.Fatal(err)
	}
	os.Chmod(*listen, 0777)
	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func(c net.Conn) {
			s, err := net.Dial("unix", *to)
			if err != nil {
				log.Print(err)
				c.Close()
				return
			}
			go pipe(c, s, *delay)
			pipe(s, c, *delay)
		}(c)
	}
}
