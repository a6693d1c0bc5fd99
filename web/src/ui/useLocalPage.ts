// Paging kept in the page's state (lists that have no URL of their own: a section of a page).
import { useState } from "react";
import type { Page } from "./QueryTable";

export function useLocalPage(limit: number): Page & { input: { limit: number; offset: number } } {
  const [offset, setOffset] = useState(0);
  return { offset, limit, onOffset: setOffset, input: { limit, offset } };
}
