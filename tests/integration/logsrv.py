# A stand-in syslog at /dev/log (inside a private mount namespace: tests/integration/t_cli.sh):
# a datagram or a stream socket, what it receives written to OUT. Usage: logsrv.py dgram|stream OUT
import socket, sys, os, time
kind = sys.argv[1]; out = sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM if kind == "stream" else socket.SOCK_DGRAM)
s.bind("/dev/log"); os.chmod("/dev/log", 0o666)
s.settimeout(8)
with open(out, "wb") as f:
    try:
        if kind == "stream":
            s.listen(4); c, _ = s.accept(); c.settimeout(3)
            while True:
                d = c.recv(4096)
                if not d: break
                f.write(d); f.flush()
        else:
            while True:
                d, _ = s.recvfrom(4096); f.write(d + b"\n"); f.flush()
    except Exception as e:
        pass
