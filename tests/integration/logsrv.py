# A stand-in syslog at /dev/log (inside a private mount namespace: tests/integration/t_cli.sh):
# a datagram or a stream socket, what it receives written to OUT. Usage: logsrv.py dgram|stream OUT
import socket, sys, os, time
kind = sys.argv[1]; out = sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM if kind == "stream" else socket.SOCK_DGRAM)
# bound and listening under another name, then renamed: /dev/log is there only once it
# takes lines (the test waits for it)
s.bind("/dev/log.new"); os.chmod("/dev/log.new", 0o666)
if kind == "stream":
    s.listen(4)
os.rename("/dev/log.new", "/dev/log")
s.settimeout(8)
with open(out, "wb") as f:
    try:
        if kind == "stream":
            c, _ = s.accept(); c.settimeout(3)
            while True:
                d = c.recv(4096)
                if not d: break
                f.write(d); f.flush()
        else:
            while True:
                d, _ = s.recvfrom(4096); f.write(d + b"\n"); f.flush()
    except Exception as e:
        pass
