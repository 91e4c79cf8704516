/** Upload throughput of POST /v1/files (decoded MiB/s) against a decoding node:http baseline. */
import { filesBenchEnv, runFilesBench } from "../files.ts"
import type { Scenario } from "../Scenario.ts"

export const files: Scenario = {
  name: "POST /v1/files",
  env: filesBenchEnv,
  run: (context) => runFilesBench({ targets: context.targets, seconds: context.seconds })
}
