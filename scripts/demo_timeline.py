"""The demo report's task timeline: bars of every task on /task_events (status intervals, charging, waits for a
held lane or station) and the row names from the task configuration's templates."""

from __future__ import annotations


def subtask_names(config: dict, task_type: str) -> dict[str, str]:
    """Subtask path (`task/duty[0]/message[1]`, as on /task_events) -> the template it is made from, for the
    timeline's row labels: the task manager's decomposition of `task_type` walked through the configuration's
    levels and templates."""
    levels, templates = config["levels"], config["templates"]
    names: dict[str, str] = {}

    def walk(path: str, template: str, depth: int) -> None:
        names[path] = template
        for i, child in enumerate(templates.get(template, {}).get("children", [])):
            if depth + 1 < len(levels):
                walk(f"{path}/{levels[depth + 1]}[{i}]", child["type"], depth + 1)

    walk(levels[0], task_type, 0)
    return names


def task_timeline(events: list, config: dict, types: dict) -> tuple[list, dict]:
    """The timeline's bars and row names from /task_events: each subtask's status intervals (running, delayed,
    interrupted, charging) and each drive's waits for a lane or station another robot holds (`waiting`, from
    the WAITING event that announces it to the one that ends it). With more than one task a row is
    `<task id>/<path>` and the task's row is named with its type; `types` is task id -> task type."""
    from lockstep_interfaces.msg import TaskEvent

    import tasks_support as ts

    t0 = min((ts.secs(e.stamp) for e in events), default=0.0)
    order = list(dict.fromkeys(e.task_id for e in events))
    several = len(order) > 1

    def row(e) -> str:
        return f"{e.task_id}/{e.path}" if several else e.path

    open_since: dict = {}
    waits: dict = {}
    bars = []
    for e in sorted(events, key=lambda e: ts.secs(e.stamp)):
        t, key = ts.secs(e.stamp) - t0, row(e)
        if e.kind in (TaskEvent.STATUS, TaskEvent.FINISHED) and key in open_since:
            status, since = open_since.pop(key)
            bars.append({"path": key, "level": e.level, "status": status, "start_s": since, "end_s": t})
        if e.kind == TaskEvent.STATUS and e.new_status in ("running", "delayed", "interrupted", "charging"):
            open_since[key] = (e.new_status, t)
        if e.kind == TaskEvent.WAITING:
            if key in waits:
                bars.append({"path": key, "level": e.level, "status": "waiting", "start_s": waits.pop(key),
                             "end_s": t})
            if e.reason.startswith("waiting at"):
                waits[key] = t
    end = max((ts.secs(e.stamp) - t0 for e in events), default=0.0)
    bars += [{"path": p, "level": 0, "status": s, "start_s": since, "end_s": end}
             for p, (s, since) in open_since.items()]
    bars += [{"path": p, "level": 0, "status": "waiting", "start_s": since, "end_s": end}
             for p, since in waits.items()]
    names: dict[str, str] = {}
    for task_id in order:
        for path, name in subtask_names(config, types.get(task_id, "")).items():
            names[f"{task_id}/{path}" if several else path] = name
        if several:
            names[f"{task_id}/{config['levels'][0]}"] = f"{types.get(task_id, '')} ({task_id})"
    return bars, names
