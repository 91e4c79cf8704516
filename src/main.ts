/**
 * The one entry point. Node's compile cache first (in the OS's temporary directory): a start
 * then skips compiling and type-stripping what an earlier start already did, about a quarter of
 * the command line's start-up. Then the command line itself (src/cli/Root.ts).
 */
import { enableCompileCache } from "node:module"

enableCompileCache()
// A reader that goes away (`events tail | head -2`) ends the command quietly, as it ends any
// Unix filter, rather than with Node's stack for an unhandled EPIPE.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0)
  throw error
})
await import("./cli/Root.ts")
