/** An AdapterContext for adapter tests: no credentials and no attachments unless given. */
import { Effect, Redacted } from "effect"
import { NotFound } from "../../../domain/Errors.ts"
import type { AdapterContext, StagedFileContent } from "../../../infra/providers/Adapter.ts"

export const adapterContext = (options: {
  readonly credentials?: Readonly<Record<string, string>>
  readonly files?: ReadonlyArray<StagedFileContent>
  readonly reads?: Array<string>
} = {}): AdapterContext => ({
  executionId: "exe_test",
  projectId: "proj_test",
  userId: "user_test",
  credentials: options.credentials === undefined ? undefined : Redacted.make(options.credentials),
  files: {
    read: (fileId) => {
      options.reads?.push(fileId)
      const file = options.files?.find((candidate) => candidate.fileId === fileId)
      return file === undefined ? Effect.fail(new NotFound({ message: `File ${fileId} is not attached to this execution.` })) : Effect.succeed(file)
    }
  }
})
