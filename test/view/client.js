// A Foxglove WebSocket client built from Foxglove's own npm packages (@foxglove/ws-protocol's
// FoxgloveClient, @foxglove/rosmsg's parser, @foxglove/rosmsg2-serialization's CDR reader): what the
// Foxglove app does with a live connection. test/view drives lockstep view with it.
//
//   node client.js ws://127.0.0.1:8765 --subscribe /odom,/markers [--seconds 10] [--max 20] [--bad] [--stall]
//
// Prints one JSON line per event: serverInfo, advertise (one per channel), unadvertise, status, and each
// subscribed message decoded from the advertised schema (with --quiet, only counts). Exits after --seconds,
// or once every subscribed topic has given --max messages. --bad first sends malformed input (not JSON, an
// unknown channel, a huge subscribe list, a binary frame); --stall subscribes and then stops reading its
// socket (a slow client). --set-parameter /node.name=<json> (repeatable) sets parameters, then
// --get-parameters a,b (empty: all) reads them; both go out once the first subscribed message arrived (so the
// server has seen the graph), or at once without --subscribe. Answers print as parameterValues lines.
// --call-service /name=<json> (repeatable; the name `unknown` calls service id 424242) calls services in JSON
// once every named one is advertised (call ids 1, 2, ... in order); answers print as serviceCallResponse /
// serviceCallFailure lines.
// --token T sends `Authorization: Bearer T` with the upgrade request (or put ?token=T in the URL); --ca PEM
// trusts that certificate for a wss:// URL. A refused upgrade prints a `refused` line (HTTP status and body).
"use strict";
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const { WebSocket } = require("ws");
const { parse } = require("@foxglove/rosmsg");
const { MessageReader } = require("@foxglove/rosmsg2-serialization");

const args = process.argv.slice(2);
const url = args[0];
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const wanted = new Set((option("--subscribe", "") || "").split(",").filter(Boolean));
const seconds = Number(option("--seconds", "10"));
const max = Number(option("--max", "20"));
const quiet = args.includes("--quiet");
const stall = args.includes("--stall");
const bad = args.includes("--bad");
// --latency: the messages are std_msgs/String whose data starts with the publisher's wall clock in ns; the
// client keeps (receipt - publish) per message and prints percentiles at the end.
const latency = args.includes("--latency");
const latencies = [];
const getParameters = option("--get-parameters", null);
// Every `name=rest` given with a repeatable option, as [name, rest].
const repeated = (option) =>
  args
    .map((a, i) => (a === option ? args[i + 1] : null))
    .filter((a) => a !== null)
    .map((a) => [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)]);
const setParameters = repeated("--set-parameter").map(([name, value]) => ({ name, value: JSON.parse(value) }));
const serviceCalls = repeated("--call-service").map(([name, request]) => ({ name, request }));
const services = new Map(); // name -> advertised service
let servicesCalled = false;
const callServices = () => {
  if (servicesCalled || serviceCalls.length === 0) return;
  if (!serviceCalls.every((c) => c.name === "unknown" || services.has(c.name))) return;
  servicesCalled = true;
  serviceCalls.forEach((c, i) => {
    const serviceId = c.name === "unknown" ? 424242 : services.get(c.name).id;
    const data = new Uint8Array(Buffer.from(c.request, "utf8"));
    client.sendServiceCallRequest({ serviceId, callId: i + 1, encoding: "json", data });
  });
};
let parametersAsked = false;
const askParameters = () => {
  if (parametersAsked) return;
  parametersAsked = true;
  if (setParameters.length > 0) client.setParameters(setParameters, "set");
  else if (getParameters !== null) client.getParameters(getParameters.split(",").filter(Boolean), "get");
};
const nowNs = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e3)) * 1000n;

const out = (obj) =>
  process.stdout.write(JSON.stringify(obj, (_k, v) => (typeof v === "bigint" ? v.toString() : v)) + "\n");

const token = option("--token", null);
const ca = option("--ca", null);
const wsOptions = {};
if (token !== null) wsOptions.headers = { Authorization: `Bearer ${token}` };
if (ca !== null) wsOptions.ca = require("fs").readFileSync(ca);
const socket = new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL], wsOptions);
socket.on("unexpected-response", (_req, res) => {
  let body = "";
  res.on("data", (chunk) => (body += chunk));
  res.on("end", () => {
    out({ op: "refused", status: res.statusCode, body });
    process.exit(0);
  });
});
const client = new FoxgloveClient({ ws: socket });
const channels = new Map(); // channel id -> { topic, reader }
const subscriptions = new Map(); // subscription id -> channel id
const counts = new Map(); // topic -> messages

const finish = (code) => {
  const sorted = latencies.slice().sort((a, b) => a - b);
  const pct = (p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : null);
  out({ op: "done", counts: Object.fromEntries(counts), latency_ms: { p50: pct(50), p99: pct(99), n: sorted.length } });
  client.close();
  process.exit(code);
};
setTimeout(() => finish(0), seconds * 1000);

client.on("error", (e) => out({ op: "error", message: String(e && e.message ? e.message : e) }));
client.on("close", () => finish(0));
client.on("serverInfo", (info) => {
  out({ op: "serverInfo", name: info.name, capabilities: info.capabilities });
  if (bad) {
    const huge = Array.from({ length: 20000 }, (_, i) => ({ id: 100000 + i, channelId: i }));
    socket.send("{not json");
    socket.send(JSON.stringify({ op: "subscribe", subscriptions: [{ id: 99999, channelId: 424242 }] }));
    socket.send(JSON.stringify({ op: "subscribe", subscriptions: huge }));
    socket.send(Buffer.from([5, 0, 0, 0]));
  }
  if (wanted.size === 0) askParameters();
});
client.on("status", (s) => out({ op: "status", level: s.level, message: s.message }));
client.on("advertiseServices", (list) => {
  for (const s of list) {
    services.set(s.name, s);
    out({ op: "advertiseService", id: s.id, name: s.name, type: s.type, request: s.request, response: s.response });
  }
  callServices();
});
client.on("unadvertiseServices", (ids) => out({ op: "unadvertiseServices", ids }));
client.on("serviceCallResponse", (r) => {
  const text = Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength).toString("utf8");
  out({ op: "serviceCallResponse", callId: r.callId, encoding: r.encoding, response: JSON.parse(text) });
});
client.on("serviceCallFailure", (f) => out({ op: "serviceCallFailure", callId: f.callId, message: f.message }));
client.on("parameterValues", (e) => {
  out({ op: "parameterValues", id: e.id, parameters: e.parameters });
  if (e.id === "set" && getParameters !== null) client.getParameters(getParameters.split(",").filter(Boolean), "get");
});
client.on("unadvertise", (ids) => out({ op: "unadvertise", ids }));
client.on("advertise", (list) => {
  for (const ch of list) {
    out({ op: "advertise", id: ch.id, topic: ch.topic, encoding: ch.encoding, schemaName: ch.schemaName });
    let reader;
    try {
      reader = new MessageReader(parse(ch.schema, { ros2: true }));
    } catch (e) {
      out({ op: "schemaError", topic: ch.topic, message: String(e.message) });
      continue;
    }
    channels.set(ch.id, { topic: ch.topic, reader });
    if (wanted.has(ch.topic)) {
      subscriptions.set(client.subscribe(ch.id), ch.id);
      if (stall) {
        out({ op: "stalled", topic: ch.topic });
        setTimeout(() => socket._socket.pause(), 100);
      }
    }
  }
});
client.on("message", ({ subscriptionId, timestamp, data }) => {
  const ch = channels.get(subscriptions.get(subscriptionId));
  if (!ch) return;
  askParameters();
  const n = (counts.get(ch.topic) || 0) + 1;
  counts.set(ch.topic, n);
  if (latency) {
    // std_msgs/String CDR: 4 bytes encapsulation, 4 bytes length, then the text, whose leading digits are the
    // publish time. Only those are read (decoding a 1 MiB string per message would measure the client).
    const bytes = new Uint8Array(data.buffer, data.byteOffset + 8, Math.min(19, data.byteLength - 8));
    const sent = BigInt(Buffer.from(bytes).toString("latin1").replace(/[^0-9].*$/, "") || "0");
    latencies.push(Number(nowNs() - sent) / 1e6);
  } else {
    let msg;
    try {
      msg = ch.reader.readMessage(data);
    } catch (e) {
      out({ op: "decodeError", topic: ch.topic, message: String(e.message) });
      return;
    }
    if (!quiet) out({ op: "message", topic: ch.topic, timestamp, msg });
  }
  if (wanted.size > 0 && [...wanted].every((t) => (counts.get(t) || 0) >= max)) finish(0);
});
