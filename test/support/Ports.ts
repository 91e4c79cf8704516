import { createServer } from "node:net"

/** A TCP port that was free a moment ago (the OS picks it; a race with other binders is unlikely). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = address !== null && typeof address === "object" ? address.port : 0
      server.close(() => resolve(port))
    })
  })
