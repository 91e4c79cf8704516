/**
 * Staged files: upload by picking or dropping files (Upload.tsx), the project's list with cursor
 * paging (unpinned keys only), and one file's metadata by id (any key). There is no route for a
 * file's bytes, so none is offered.
 */
import { Fragment } from "preact"
import { useState } from "preact/hooks"
import type { FileMetadata } from "../../../client/index.ts"
import { type Client, isPinned, type Me, type Problem, toProblem } from "../api.ts"
import { PAGE_SIZE, usePaged, useResource } from "../data.ts"
import { Button } from "../ui/Button.tsx"
import { dropErrorOnEdit, ErrorNotice, Loading, PinnedNotice } from "../ui/Feedback.tsx"
import { ListState } from "../ui/ListState.tsx"
import { ListTable } from "../ui/ListTable.tsx"
import { formatSize } from "../ui/Size.ts"
import { shownText, UserText } from "../ui/Text.tsx"
import { Time } from "../ui/Time.tsx"
import { Upload } from "./Upload.tsx"

const Metadata = ({ file }: { readonly file: FileMetadata }) => (
  <dl class="fields">
    <dt>File id</dt>
    <dd><code>{file.fileId}</code></dd>
    <dt>Name</dt>
    <dd class="file-name"><UserText text={file.name} /></dd>
    <dt>MIME type</dt>
    <dd><UserText text={file.mimeType} /></dd>
    <dt>Size</dt>
    <dd>{formatSize(file.size)}</dd>
    <dt>Expires</dt>
    <dd><Time iso={file.expiresAt} /></dd>
  </dl>
)

/**
 * A listed file's metadata read afresh when asked for (`GET /v1/files/:id`): the list may be
 * older than the file's expiry, and a file past it is gone (404), not shown as if it were there.
 */
const FreshMetadata = ({ client, fileId }: { readonly client: Client; readonly fileId: string }) => {
  const file = useResource(`file:${fileId}`, () => client.files.get(fileId))
  if (file.problem !== undefined) return <ErrorNotice problem={file.problem} />
  if (file.value === undefined) return <Loading what="the file's metadata" />
  return <Metadata file={file.value} />
}

const Lookup = ({ client }: { readonly client: Client }) => {
  const [fileId, setFileId] = useState("")
  const [result, setResult] = useState<{ readonly file?: FileMetadata; readonly problem?: Problem } | undefined>(undefined)
  return (
    <section aria-labelledby="lookup-title">
      <h2 id="lookup-title">Look up a file</h2>
      <form
        class="inline"
        // An error is about the id it was shown for: it goes once the id changes (a metadata shown stays).
        {...dropErrorOnEdit(() => setResult((shown) => (shown?.problem === undefined ? shown : undefined)))}
        onSubmit={async (event) => {
          event.preventDefault()
          const id = fileId.trim()
          if (id === "") {
            setResult({ problem: { code: "invalid_input", message: "Enter a file id (file_…).", status: 0, retryable: false } })
            return
          }
          try {
            setResult({ file: await client.files.get(id) })
          } catch (error) {
            setResult({ problem: toProblem(error) })
          }
        }}
      >
        <label for="lookup-id">File id</label>
        <input id="lookup-id" type="text" required value={fileId} onInput={(event) => setFileId(event.currentTarget.value)} placeholder="file_…" />
        <button type="submit">Show metadata</button>
      </form>
      {result?.problem === undefined ? null : <ErrorNotice problem={result.problem} />}
      {result?.file === undefined ? null : <Metadata file={result.file} />}
    </section>
  )
}

const FileList = ({ client, refresh }: { readonly client: Client; readonly refresh: number }) => {
  const paged = usePaged(`files:${refresh}`, async (cursor) => {
    const page = await client.files.list({ limit: PAGE_SIZE, cursor })
    return { items: page.files, nextCursor: page.nextCursor }
  })
  const [selected, setSelected] = useState<string | undefined>(undefined)
  return (
    <section aria-labelledby="files-title">
      <div class="section-head">
        <h2 id="files-title">Files in the project</h2>
        <Button enabled={!paged.busy} onPress={paged.reload}>Refresh</Button>
      </div>
      <ListState paged={paged} what="files" empty="No staged files. Uploaded files appear here until they expire.">
        {(files) => (
          <ListTable
            label="Staged files, newest first"
            columns={["Name", "File id", "MIME type", "Size", "Expires"]}
            actions
          >
            {files.map((file) => (
              <Fragment key={file.fileId}>
                <tr>
                  <td class="file-name"><UserText text={file.name} /></td>
                  <td><code>{file.fileId}</code></td>
                  <td><UserText text={file.mimeType} /></td>
                  <td>{formatSize(file.size)}</td>
                  <td><Time iso={file.expiresAt} /></td>
                  <td>
                    <button
                      type="button"
                      aria-expanded={selected === file.fileId}
                      aria-label={`Metadata of ${shownText(file.name)}`}
                      onClick={() => setSelected(selected === file.fileId ? undefined : file.fileId)}
                    >
                      Metadata
                    </button>
                  </td>
                </tr>
                {selected === file.fileId ? (
                  <tr>
                    <td colSpan={6}><FreshMetadata client={client} fileId={file.fileId} /></td>
                  </tr>
                ) : null}
              </Fragment>
            ))}
          </ListTable>
        )}
      </ListState>
    </section>
  )
}

export const Files = ({ client, me }: { readonly client: Client; readonly me: Me }) => {
  const [refresh, setRefresh] = useState(0)
  return (
    <>
      <Upload client={client} onUploaded={() => setRefresh((n) => n + 1)} />
      {isPinned(me) ? (
        <section aria-labelledby="files-title">
          <h2 id="files-title">Files in the project</h2>
          <PinnedNotice what="the project's file list" userId={me.pinnedUserId ?? ""} />
        </section>
      ) : (
        <FileList client={client} refresh={refresh} />
      )}
      <Lookup client={client} />
    </>
  )
}
