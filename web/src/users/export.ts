// The users export (POST /api/v1/users/export: a plain route, it answers CSV) downloaded by the
// browser with the list's filters. Same-origin, with the session cookie, as every call.
export class ExportError extends Error {}

/** Downloads the CSV and answers how many users it holds (its CRLF-ended records after the header; names hold no line breaks). */
export async function downloadExport(filters: { search?: string; status?: "active" | "disabled" }): Promise<number> {
  const res = await fetch("/api/v1/users/export", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ format: "csv", ...filters }),
  });
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { message?: string } | null;
    throw new ExportError(body?.message ?? `The export failed (HTTP ${res.status})`);
  }
  const blob = await res.blob();
  const name = /filename="([^"]+)"/.exec(res.headers.get("Content-Disposition") ?? "")?.[1] ?? "users.csv";
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.click();
  URL.revokeObjectURL(url);
  return Math.max(0, (await blob.text()).split("\r\n").filter(Boolean).length - 1);
}
