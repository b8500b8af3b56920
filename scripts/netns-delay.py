#!/usr/bin/env python3
# scripts/netns-delay.py TUN MS PCT - the delay and loss of
# scripts/netns-cluster.sh (this kernel has no netem): run in the router
# namespace, it makes the TUN device, reads every packet the router's rules
# steer into it, drops PCT in 100 at random and writes each other one back
# MS milliseconds after it came; the router then routes it on as usual.
# Ends on SIGTERM (netns-cluster.sh heal) or when its namespace goes.
import fcntl, heapq, os, random, select, signal, struct, sys, time

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000


def open_tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def main():
    name, delay, loss = sys.argv[1], float(sys.argv[2]) / 1000, float(sys.argv[3]) / 100
    fd = open_tun(name)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    held, seq = [], 0  # (due time, arrival order, packet): FIFO among equals
    while True:
        wait = max(0.0, held[0][0] - time.monotonic()) if held else None
        ready, _, _ = select.select([fd], [], [], wait)
        if ready:
            pkt = os.read(fd, 65536)
            if random.random() >= loss:
                heapq.heappush(held, (time.monotonic() + delay, seq, pkt))
                seq += 1
        now = time.monotonic()
        while held and held[0][0] <= now:
            try:
                os.write(fd, heapq.heappop(held)[2])
            except OSError:
                pass  # a packet the router no longer takes is a lost one


if __name__ == "__main__":
    main()
