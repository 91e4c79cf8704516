/**
 * The one entry point. Node's compile cache first (in the OS's temporary directory): a start
 * then skips compiling and type-stripping what an earlier start already did, about a quarter of
 * the command line's start-up. Then the command line itself (src/cli/Root.ts); a stop signal that
 * arrives while it loads ends the process cleanly.
 */
import { enableCompileCache } from "node:module"
import { cutShort } from "./cli/Stopping.ts"

enableCompileCache()
// A reader that goes away (`events tail | head -2`) ends the command quietly, as it ends any
// Unix filter, rather than with Node's stack for an unhandled EPIPE.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0)
  throw error
})
// Until the command line's runtime has its own handlers (it installs them as Root.ts runs), a
// stop signal would end the process by Node's default, status 143 and no word. With a listener
// Node catches it instead, and hands it over at the event loop's next turn: to the runtime's
// handlers if they are in by then (a clean stop), else to this one: nothing has started yet (no
// connection, no lease), so the process ends at once.
// That is a clean end for `serve` (and `events tail`); any other command did not do its work,
// and says so (cli/Stopping.ts).
const stopWhileLoading = (signal: NodeJS.Signals) => {
  const status = cutShort(signal)
  if (status !== undefined) process.exit(status)
  const message = `stopped before start-up finished (${signal})`
  process.stderr.write(process.stderr.isTTY ? `${message}\n` : `${JSON.stringify({ time: new Date().toISOString(), level: "info", message })}\n`)
  process.exit(0)
}
process.once("SIGTERM", stopWhileLoading)
process.once("SIGINT", stopWhileLoading)
await import("./cli/Root.ts")
process.removeListener("SIGTERM", stopWhileLoading)
process.removeListener("SIGINT", stopWhileLoading)
