/** The benchmark's scenarios, run in this order; a new one is one import and one entry. */
import type { Scenario } from "../Scenario.ts"
import { files } from "./files.ts"
import { me } from "./me.ts"

export const scenarios: ReadonlyArray<Scenario> = [me, files]
