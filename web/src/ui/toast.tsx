// Short notices after an action ("Label set on 12 devices"), announced to screen readers.
import { createContext, useCallback, useContext, useMemo, useState, type ReactNode } from "react";
import { X } from "lucide-react";
import { messageOf, requestIdOf } from "../api/client";

interface Toast {
  id: number;
  kind: "success" | "error" | "info";
  text: string;
  detail?: string;
}

interface ToastApi {
  success(text: string): void;
  /** an error with the API's message and request id */
  error(error: unknown, prefix?: string): void;
}

const ToastContext = createContext<ToastApi | null>(null);
let nextId = 1;

export function ToastProvider({ children }: { children: ReactNode }) {
  const [toasts, setToasts] = useState<Toast[]>([]);
  const dismiss = useCallback((id: number) => setToasts((all) => all.filter((t) => t.id !== id)), []);
  const push = useCallback((toast: Omit<Toast, "id">) => {
    const id = nextId++;
    setToasts((all) => [...all.slice(-3), { ...toast, id }]);
    window.setTimeout(() => dismiss(id), toast.kind === "error" ? 10_000 : 5_000);
  }, [dismiss]);
  const api = useMemo<ToastApi>(() => ({
    success: (text) => push({ kind: "success", text }),
    error: (error, prefix) => {
      const id = requestIdOf(error);
      push({ kind: "error", text: prefix ? `${prefix}: ${messageOf(error)}` : messageOf(error), detail: id ? `request id ${id}` : undefined });
    },
  }), [push]);
  return (
    <ToastContext.Provider value={api}>
      {children}
      <div className="toasts" role="status" aria-live="polite">
        {toasts.map((t) => (
          <div key={t.id} className={`toast toast--${t.kind}`}>
            <div className="toast__text">
              <div>{t.text}</div>
              {t.detail && <div className="request-id">{t.detail}</div>}
            </div>
            <button className="btn btn--ghost btn--small btn--icon" aria-label="Dismiss" onClick={() => dismiss(t.id)}>
              <X />
            </button>
          </div>
        ))}
      </div>
    </ToastContext.Provider>
  );
}

export function useToast(): ToastApi {
  const api = useContext(ToastContext);
  if (!api) throw new Error("useToast outside ToastProvider");
  return api;
}
