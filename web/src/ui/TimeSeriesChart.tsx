// Time series on uPlot (canvas; tens of thousands of points draw in milliseconds). React
// renders the container once: new data goes to the existing chart through setData, and the
// chart is rebuilt only when its series, unit or the theme change. Lines break where the data
// holds nulls (alignWithGaps puts them where the source was silent); a point alone between
// two gaps is drawn as a dot. The legend under the chart is the hover read-out (time and every
// value with its unit), axes are labelled in the user's locale, colours come from the theme's
// CSS variables, and the width follows the container.
import { useEffect, useRef, useSyncExternalStore } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { formatters, isolatedIndicesOnce, type AlignedColumns, type ValueUnit } from "./time-series";
import "./time-series-chart.css";

export interface ChartSeries {
  label: string;
  /** a theme variable: "--chart-1" */
  color: string;
}

const format = formatters();
/** Whole steps for count axes: a count of containers has no 0.5. */
const COUNT_INCREMENTS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6];

/** The theme on <html> (data-theme), as it changes: charts paint with colours read once per theme. */
function subscribeTheme(onChange: () => void) {
  const observer = new MutationObserver(onChange);
  observer.observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  return () => observer.disconnect();
}
function useThemeName(): string {
  return useSyncExternalStore(subscribeTheme, () => document.documentElement.dataset.theme ?? "light");
}

function themeColor(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
}

function options(series: ChartSeries[], unit: ValueUnit, width: number, height: number, xRange: { current: [number, number] | undefined }, syncKey?: string): uPlot.Options {
  const text = themeColor("--text-muted");
  const grid = themeColor("--chart-grid");
  const font = `12px ${themeColor("--font")}`;
  const colors = series.map((s) => themeColor(s.color));
  const axis = { stroke: text, font, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1, size: 4 } };
  return {
    width,
    height,
    cursor: { sync: syncKey ? { key: syncKey } : undefined, points: { size: 7 } },
    legend: { live: true, markers: { width: 0, fill: (_u, i) => (i > 0 ? colors[i - 1] : "transparent") } },
    scales: {
      // The x scale spans the asked range even where nothing was sent, so silence shows as space.
      x: { time: true, range: (_u, min, max) => xRange.current ?? [min, max] },
      y: unit === "percent"
        ? { range: [0, 100] }
        : { range: (_u, _min, max) => uPlot.rangeNum(0, max == null || max <= 0 ? 1 : max, 0.1, true) },
    },
    axes: [
      { ...axis, space: 90, size: 44, values: (_u, splits, _i, _space, incr) => format.timeTicks(splits, incr) },
      {
        ...axis,
        size: 56,
        values: (_u, splits) => splits.map((v) => format.value(v, unit)),
        ...(unit === "count" ? { incrs: COUNT_INCREMENTS } : {}),
      },
    ],
    series: [
      { label: "Time", value: (_u, v) => (v == null ? "–" : format.pointTime(v)) },
      ...series.map((s, i): uPlot.Series => ({
        label: s.label,
        stroke: colors[i],
        width: 1.5,
        value: (_u, v) => format.value(v, unit),
        points: {
          show: false,
          fill: colors[i],
          // A lone point between two gaps has no line to be seen on: draw it as a dot.
          filter: (u, seriesIdx) => isolatedIndicesOnce(u.data[seriesIdx] as (number | null)[]),
        },
      })),
    ],
  };
}

export function TimeSeriesChart({ data, series, unit, label, xRange, height = 220, syncKey }: {
  /** columns from alignWithGaps: x in seconds, then one column per series */
  data: AlignedColumns;
  series: ChartSeries[];
  unit: ValueUnit;
  /** the chart's accessible name */
  label: string;
  /** the x range to show in seconds (a chosen time range), whatever the data covers */
  xRange?: [number, number];
  /** the height of the plot in CSS pixels (the legend adds to it) */
  height?: number;
  /** charts with the same key move their cursors together */
  syncKey?: string;
}) {
  const container = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  const latestData = useRef(data);
  latestData.current = data;
  const range = useRef(xRange);
  range.current = xRange;
  const theme = useThemeName();
  const seriesKey = JSON.stringify(series);

  // Build (and rebuild on a new theme or series): colours and labels are read here.
  useEffect(() => {
    const el = container.current!;
    const u = new uPlot(options(JSON.parse(seriesKey), unit, el.clientWidth || 600, height, range, syncKey), latestData.current as uPlot.AlignedData, el);
    chart.current = u;
    const resize = new ResizeObserver(() => {
      if (el.clientWidth > 0 && el.clientWidth !== u.width) u.setSize({ width: el.clientWidth, height });
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      chart.current = null;
    };
  }, [seriesKey, unit, height, theme, syncKey]);

  // New data (or range) into the existing chart: no React work per point.
  const [rangeFrom, rangeTo] = xRange ?? [];
  useEffect(() => {
    const u = chart.current;
    if (u && u.data !== (data as uPlot.AlignedData)) u.setData(data as uPlot.AlignedData);
    else if (u) u.setScale("x", { min: rangeFrom ?? u.scales.x.min!, max: rangeTo ?? u.scales.x.max! });
  }, [data, rangeFrom, rangeTo]);

  return <div ref={container} className="ts-chart" role="figure" aria-label={label} />;
}
