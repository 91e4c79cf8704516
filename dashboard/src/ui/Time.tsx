/** A time from the API: the local rendering for people, the ISO value for machines and titles. */
export const formatTime = (iso: string): string => {
  const date = new Date(iso)
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" })
}

export const Time = ({ iso }: { readonly iso: string | undefined }) =>
  iso === undefined ? <span class="muted">—</span> : <time dateTime={iso} title={iso}>{formatTime(iso)}</time>
