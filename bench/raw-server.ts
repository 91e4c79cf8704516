/**
 * The baseline: a bare `node:http` server answering a body like `GET /v1/me`'s, so the service's
 * overhead can be read as a ratio on the same machine in the same run.
 */
import { createServer } from "node:http"

const body = JSON.stringify({ projectId: "proj_bench", keyId: "key_bootstrap_1" })

const server = createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body), "request-id": "req_raw" })
    res.end(body)
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1", () => {
  const address = server.address()
  if (address !== null && typeof address === "object") process.stdout.write(`listening on ${address.port}\n`)
})
process.on("SIGTERM", () => server.close(() => process.exit(0)))
