// The device's activity log as a timeline, newest first, filterable by event type (in the URL).
import { useNavigate, useSearch } from "@tanstack/react-router";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Activity, BadgeCheck, Ban, DoorOpen, KeyRound, LogIn, LogOut, Pencil, Power, Tags, Unlink } from "lucide-react";
import type { RouterInputs, RouterOutputs } from "../../api/client";
import { q } from "../../api/query";
import { useRealtimeEvents } from "../../app/realtime";
import { Card } from "../../ui/Card";
import { Pagination } from "../../ui/Pagination";
import { Empty, ErrorState, Loading } from "../../ui/states";
import { formatDateTime, RelativeTime } from "../../ui/time";
import type { Device } from "../types";

type EventType = NonNullable<RouterInputs["devices"]["activity"]["type"]>[number];
type DeviceEvent = RouterOutputs["devices"]["activity"]["items"][number];

const TYPES = {
  enrolled: { label: "Enrolled", icon: Power },
  status_changed: { label: "Status changed", icon: Activity },
  labels_changed: { label: "Labels changed", icon: Tags },
  updated: { label: "Updated", icon: Pencil },
  claim_released: { label: "Claim released", icon: Unlink },
  certificate_issued: { label: "Certificate issued", icon: KeyRound },
  certificate_renewed: { label: "Certificate renewed", icon: BadgeCheck },
  certificate_revoked: { label: "Certificate revoked", icon: Ban },
  // A continuous deployment's selector started or stopped matching the device (docs/deployments.md).
  deployment_joined: { label: "Joined a deployment", icon: LogIn },
  deployment_left: { label: "Left a deployment", icon: LogOut },
  approved: { label: "Approved in the lobby", icon: DoorOpen },
} satisfies Record<EventType, unknown>;

const PAGE = 50;

export function ActivityTab({ device }: { device: Device }) {
  const search = useSearch({ from: "/app/devices/$deviceId" });
  const navigate = useNavigate({ from: "/devices/$deviceId" });
  const queryClient = useQueryClient();
  const type = search.type && search.type in TYPES ? (search.type as EventType) : undefined;
  const offset = search.offset ?? 0;
  const setOffset = (o: number) => void navigate({ search: (prev) => ({ ...prev, offset: o || undefined }), replace: true });
  const events = useQuery({
    ...q.devices.activity.options({ id: device.id, limit: PAGE, offset, type: type ? [type] : undefined }),
    placeholderData: keepPreviousData,
  });
  useRealtimeEvents((event) => {
    if (event.type === "device.status_changed" && event.data.deviceId === device.id) void queryClient.invalidateQueries({ queryKey: q.devices.activity.key() });
  });

  return (
    <Card
      title="Activity"
      flush
      actions={
        <label className="row">
          <span>Type</span>
          <select className="select" value={type ?? ""} onChange={(e) => void navigate({ search: (prev) => ({ ...prev, type: e.target.value || undefined, offset: undefined }), replace: true })}>
            <option value="">All events</option>
            {Object.entries(TYPES).map(([value, t]) => <option key={value} value={value}>{t.label}</option>)}
          </select>
        </label>
      }
    >
      {events.isPending ? <Loading /> : events.isError ? <ErrorState error={events.error} what="this device's activity" /> : events.data.items.length === 0 ? (
        <Empty title={type ? `No “${TYPES[type].label}” events` : "No activity yet"} />
      ) : (
        <>
          <ol className="timeline" aria-label="Device activity">
            {events.data.items.map((e) => <TimelineItem key={e.id} event={e} />)}
          </ol>
          <Pagination label="Activity pages" offset={offset} limit={PAGE} total={events.data.total} onOffset={setOffset} />
        </>
      )}
    </Card>
  );
}

function TimelineItem({ event }: { event: DeviceEvent }) {
  const t = TYPES[event.type];
  const Icon = t.icon;
  return (
    <li className="timeline__item">
      <span className={`timeline__icon timeline__icon--${event.type}`} aria-hidden="true"><Icon /></span>
      <div className="timeline__body">
        <div className="row">
          <strong>{t.label}</strong>
          <span className="faint">by {event.actorType === "api_key" ? "an API key" : event.actorType}</span>
        </div>
        <div>{event.message}</div>
      </div>
      <span className="timeline__time" title={formatDateTime(event.createdAt)}><RelativeTime value={event.createdAt} /></span>
    </li>
  );
}
