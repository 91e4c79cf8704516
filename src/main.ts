/**
 * The one entry point. Node's compile cache first (in the OS's temporary directory): a start
 * then skips compiling and type-stripping what an earlier start already did, about a quarter of
 * the command line's start-up. Then the command line itself (src/cli/Root.ts).
 */
import { enableCompileCache } from "node:module"

enableCompileCache()
await import("./cli/Root.ts")
