"""Opens N idle PostgreSQL connections to host:port (startup, then one
simple query if one is given, then nothing) and holds them until stdin
closes. Prints "ready" once all are up.

    python3 bench/idle.py HOST PORT N USER DB [SQL]"""
import asyncio
import struct
import sys


async def read_until_ready(reader):
    while True:
        kind = await reader.readexactly(1)
        (length,) = struct.unpack("!i", await reader.readexactly(4))
        await reader.readexactly(length - 4)
        if kind == b"Z":
            return
        if kind == b"E":
            raise RuntimeError("the server answered an error")


async def connect(host, port, user, db, sql):
    reader, writer = await asyncio.open_connection(host, port)
    body = struct.pack("!i", 196608)
    for k, v in (("user", user), ("database", db)):
        body += k.encode() + b"\0" + v.encode() + b"\0"
    body += b"\0"
    writer.write(struct.pack("!i", len(body) + 4) + body)
    await writer.drain()
    await read_until_ready(reader)
    if sql:
        query = sql.encode() + b"\0"
        writer.write(b"Q" + struct.pack("!i", len(query) + 4) + query)
        await writer.drain()
        await read_until_ready(reader)
    return reader, writer


async def main():
    host, port, n, user, db = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    sql = sys.argv[6] if len(sys.argv) > 6 else None
    held = []
    for start in range(0, n, 200):
        batch = [connect(host, port, user, db, sql) for _ in range(min(200, n - start))]
        held += await asyncio.gather(*batch)
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


asyncio.run(main())
