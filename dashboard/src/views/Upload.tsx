/**
 * Uploading files, by picking or dropping one or several: each is sent as base64 by the client
 * library, one after another (a request per file, the service's body cap per file), and listed
 * with its result, the staged file's id or the service's code and message. Files dropped while
 * others are still going up join the end of the queue.
 */
import type { ComponentChildren } from "preact"
import { useRef, useState } from "preact/hooks"
import type { FileMetadata } from "../../../client/index.ts"
import { type Client, type Problem, toProblem } from "../api.ts"
import { ErrorNotice } from "../ui/Feedback.tsx"
import { formatSize } from "../ui/Size.ts"
import { shownText, UserText } from "../ui/Text.tsx"
import { Time } from "../ui/Time.tsx"

type Result =
  | { readonly kind: "waiting" }
  | { readonly kind: "uploading" }
  | { readonly kind: "uploaded"; readonly file: FileMetadata }
  | { readonly kind: "failed"; readonly problem: Problem }

interface Entry {
  readonly key: number
  readonly name: string
  readonly size: number
  readonly result: Result
}

/**
 * A 413 is the service refusing the request body as larger than its ceiling (the base64 of its
 * file cap plus room for the JSON; each service sets its own cap): said in terms of the file,
 * which is what the user picked, with the service's own message, which names the ceiling in bytes.
 */
const inFileTerms = (problem: Problem, file: File): Problem =>
  problem.status === 413
    ? {
      ...problem,
      message: `The service refused ${shownText(file.name)}, ${formatSize(file.size)}, as too large (a file is sent as base64, a third larger than the file). ` +
        `It said: ${problem.message}`
    }
    : problem

const upload = async (client: Client, file: File): Promise<Result> => {
  try {
    const content = new Uint8Array(await file.arrayBuffer())
    return { kind: "uploaded", file: await client.files.create({ name: file.name, content, ...(file.type === "" ? {} : { mimeType: file.type }) }) }
  } catch (error) {
    return { kind: "failed", problem: inFileTerms(toProblem(error), file) }
  }
}

const Outcome = ({ result }: { readonly result: Result }) => {
  switch (result.kind) {
    case "waiting":
      return <span class="muted">waiting</span>
    case "uploading":
      return <span>uploading…</span>
    case "uploaded":
      return (
        <span>
          uploaded as <code class="file-id">{result.file.fileId}</code>
          <span class="muted">, expires <Time iso={result.file.expiresAt} /></span>
        </span>
      )
    case "failed":
      return <ErrorNotice problem={result.problem} />
  }
}

const Results = ({ entries }: { readonly entries: ReadonlyArray<Entry> }) => (
  <section aria-labelledby="uploads-title">
    <h2 id="uploads-title">Uploads</h2>
    <ol class="uploads">
      {entries.map((entry) => (
        <li key={entry.key} class={`upload upload-${entry.result.kind}`}>
          <UserText class="file-name" text={entry.name} />, <span class="muted">{formatSize(entry.size)}</span>:{" "}
          <Outcome result={entry.result} />
        </li>
      ))}
    </ol>
  </section>
)

/** What the live region says: the file going up (its name isolated), then how the batch ended. */
const progress = (entries: ReadonlyArray<Entry>): ComponentChildren => {
  const current = entries.findIndex((entry) => entry.result.kind === "uploading")
  if (current >= 0) return <>Uploading {current + 1} of {entries.length}: <UserText text={entries[current]?.name ?? ""} />…</>
  const failed = entries.filter((entry) => entry.result.kind === "failed").length
  if (entries.length === 0 || entries.some((entry) => entry.result.kind === "waiting")) return ""
  const uploaded = entries.length - failed
  const files = entries.length === 1 ? "file" : "files"
  return failed === 0 ? `${uploaded} ${files} uploaded.` : `${uploaded} of ${entries.length} ${files} uploaded; ${failed} failed.`
}

export const Upload = ({ client, onUploaded }: { readonly client: Client; readonly onUploaded: () => void }) => {
  const [entries, setEntries] = useState<ReadonlyArray<Entry>>([])
  const [dragging, setDragging] = useState(false)
  const queue = useRef<Array<{ readonly key: number; readonly file: File }>>([])
  const running = useRef(false)
  const keys = useRef(0)

  const settle = (key: number, result: Result) =>
    setEntries((current) => current.map((entry) => (entry.key === key ? { ...entry, result } : entry)))

  const run = async () => {
    running.current = true
    let uploaded = 0
    for (let next = queue.current.shift(); next !== undefined; next = queue.current.shift()) {
      settle(next.key, { kind: "uploading" })
      const result = await upload(client, next.file)
      if (result.kind === "uploaded") uploaded++
      settle(next.key, result)
    }
    running.current = false
    if (uploaded > 0) onUploaded()
  }

  const add = (files: ReadonlyArray<File>) => {
    if (files.length === 0) return
    const added = files.map((file) => ({ key: ++keys.current, file }))
    const waiting = added.map(({ key, file }): Entry => ({ key, name: file.name, size: file.size, result: { kind: "waiting" } }))
    // A new batch replaces the last one's results; files added during a batch join it.
    const joining = running.current
    setEntries((current) => (joining ? [...current, ...waiting] : waiting))
    queue.current.push(...added)
    if (!running.current) void run()
  }

  return (
    <>
      <section aria-labelledby="upload-title">
        <h2 id="upload-title">Upload files</h2>
        <div
          class={dragging ? "drop-zone dragging" : "drop-zone"}
          onDragOver={(event) => {
            event.preventDefault()
            setDragging(true)
          }}
          onDragLeave={() => setDragging(false)}
          onDrop={(event) => {
            event.preventDefault()
            setDragging(false)
            add(Array.from(event.dataTransfer?.files ?? []))
          }}
        >
          <p>Drop files here, or choose them.</p>
          <label for="file-input">Files to upload</label>
          <input
            id="file-input"
            type="file"
            multiple
            onChange={(event) => {
              const input = event.currentTarget
              add(Array.from(input.files ?? []))
              // The same file can be picked again.
              input.value = ""
            }}
          />
        </div>
        <p role="status" aria-live="polite">{progress(entries)}</p>
      </section>
      {entries.length === 0 ? null : <Results entries={entries} />}
    </>
  )
}
