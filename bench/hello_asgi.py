"""The baseline: a bare ASGI app answering 200 with a small HTML page on any path.

It reads the request body first. Served by the same uvicorn command as Rostrum
(`uvicorn bench.hello_asgi:app`), it shows what the server, the loopback network and the
client cost on their own."""

BODY = (
    b"<!doctype html>\n<html lang='en'><head><meta charset='utf-8'><title>Hello</title></head>"
    b"<body><main><h1>Hello</h1><p>"
    + b"A small page standing in for a study step. " * 24
    + b"</p></main></body></html>\n"
)
HEADERS = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-length", str(len(BODY)).encode()),
    (b"cache-control", b"no-store, max-age=0"),
]


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})
