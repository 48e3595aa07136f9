"""Execute the notebooks headless on the Deno kernel and check them.

usage: python3 notebooks/run.py [notebook.ipynb ...]   (default: every notebook here)

A notebook passes when, on its first and only run, no cell raised, every cell
tagged `expect-output` produced output, and the last cell printed
`NOTEBOOK OK`. Nothing is retried.

Why not `jupyter nbconvert --execute`: nbconvert takes a cell's outputs until
the kernel reports it idle, and the Deno kernel may send a cell's stdout, or
an awaited `Deno.jupyter.display`, after that (on a loaded machine: two of
three notebooks lost an output now and then). Here each cell is followed by a
flush request that writes a marker through stdout and through the kernel's
message channel; the runner reads until both markers have arrived. Every
output of the cell went out before its markers (each channel keeps its
order), so by then it has arrived: with the cell's id, or, sent late, with
the flush request's, and either way it is the cell's.

Needs jupyter_client and nbformat (Debian: jupyter-client, jupyter-nbconvert);
when the `python3` on PATH lacks them, the script re-runs itself with the
Python that the `jupyter` command runs on.
"""
import glob
import json
import os
import queue
import shutil
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
CELL_TIMEOUT = 600  # seconds a cell may run
FLUSH_TIMEOUT = 120  # seconds for a flush's markers to arrive

try:
    import nbformat
    from jupyter_client.manager import start_new_kernel
except ImportError:
    jupyter = shutil.which("jupyter")
    if jupyter is None or os.environ.get("PHRASEVAL_NB_REEXEC"):
        sys.exit("notebooks/run.py: needs jupyter_client and nbformat "
                 "(apt-get install jupyter-client jupyter-nbconvert)")
    with open(jupyter) as f:
        interp = f.readline()[2:].strip().split()
    os.environ["PHRASEVAL_NB_REEXEC"] = "1"
    os.execv(interp[0], interp + [os.path.abspath(__file__)] + sys.argv[1:])


class Kernel:
    """A Deno kernel, its outputs grouped by the cell they belong to."""

    def __init__(self, cwd):
        self.km, self.kc = start_new_kernel(kernel_name="deno", cwd=cwd, startup_timeout=120)

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    def _reply(self, msg_id, timeout):
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError("no execute_reply")
            m = self.kc.get_shell_msg(timeout=left)
            if m["parent_header"].get("msg_id") == msg_id:
                return m

    def _iopub(self, until, timeout):
        """iopub messages until `until(msg)` holds for one of them (that one included)."""
        out = []
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError("the kernel's outputs did not arrive")
            try:
                m = self.kc.get_iopub_msg(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            out.append(m)
            if until(m):
                return out

    def run_cell(self, code):
        """The cell's outputs (nbformat dicts) and its execute_reply content."""
        cell_id = self.kc.execute(code, allow_stdin=False, stop_on_error=False)
        reply = self._reply(cell_id, CELL_TIMEOUT)
        msgs = self._iopub(lambda m: idle(m, cell_id), CELL_TIMEOUT)
        # The flush: a marker on stdout and one through the message channel.
        marker = f"phraseval-flush-{uuid.uuid4().hex}"
        flush_id = self.kc.execute(
            f'console.log("{marker}-stdout");\n'
            f'await Deno.jupyter.broadcast("stream", {{ name: "stdout", text: "{marker}-channel\\n" }});',
            allow_stdin=False, store_history=False)
        self._reply(flush_id, FLUSH_TIMEOUT)
        seen = set()

        def done(m):
            if m["msg_type"] == "stream":
                for kind in ("stdout", "channel"):
                    if f"{marker}-{kind}" in m["content"]["text"]:
                        seen.add(kind)
            return len(seen) == 2

        msgs += self._iopub(done, FLUSH_TIMEOUT)
        outputs = []
        for m in msgs:
            parent = m["parent_header"].get("msg_id")
            if parent not in (cell_id, flush_id):
                continue
            if m["msg_type"] == "stream":
                text = "".join(line for line in m["content"]["text"].splitlines(keepends=True)
                               if marker not in line)
                if not text:
                    continue
                m = {**m, "content": {**m["content"], "text": text}}
            elif m["msg_type"] not in ("display_data", "execute_result", "error"):
                continue
            if parent == flush_id and m["msg_type"] in ("execute_result", "error"):
                continue  # the flush's own value (none) or failure
            out = nbformat.v4.output_from_msg(m)
            if outputs and out.get("output_type") == "stream" and \
                    outputs[-1].get("output_type") == "stream" and \
                    outputs[-1]["name"] == out["name"]:
                outputs[-1]["text"] += out["text"]
            else:
                outputs.append(out)
        return outputs, reply["content"]


def idle(m, msg_id):
    return (m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"
            and m["parent_header"].get("msg_id") == msg_id)


def check(nb):
    """'ok', 'error' or 'incomplete', and why."""
    problems = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        outs = cell.get("outputs", [])
        for o in outs:
            if o.get("output_type") == "error":
                return "error", f"cell {i}: {o.get('ename')}: {o.get('evalue')}"
            if o.get("name") == "stderr" and "error" in "".join(o.get("text", [])).lower():
                return "error", f"cell {i}: {''.join(o.get('text', []))[:300]}"
        if "expect-output" in cell.get("metadata", {}).get("tags", []) and not outs:
            problems.append(f"cell {i} has no output")
    last = [c for c in nb["cells"] if c["cell_type"] == "code"][-1]
    text = "".join("".join(o.get("text", [])) for o in last.get("outputs", []))
    if "NOTEBOOK OK" not in text:
        problems.append("last cell did not print NOTEBOOK OK")
    return ("incomplete", "; ".join(problems)) if problems else ("ok", "")


def run(path):
    nb = nbformat.read(path, as_version=4)
    name = os.path.basename(path)
    kernel = Kernel(os.path.dirname(path))
    try:
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            outputs, reply = kernel.run_cell(cell.source)
            cell.outputs = outputs
            if reply.get("status") != "ok":
                cell.outputs.append(nbformat.v4.new_output(
                    "error", ename=reply.get("ename", "error"), evalue=reply.get("evalue", ""),
                    traceback=reply.get("traceback", [])))
                break
    except TimeoutError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return False
    finally:
        kernel.close()
    verdict, why = check(json.loads(nbformat.writes(nb)))
    if verdict == "ok":
        print(f"{name}: ok")
        return True
    print(f"{name}: {verdict}: {why}", file=sys.stderr)
    return False


if __name__ == "__main__":
    paths = sys.argv[1:] or sorted(glob.glob(os.path.join(HERE, "*.ipynb")))
    ok = all([run(os.path.abspath(p)) for p in paths])
    print(f"{len(paths)} notebooks, {'all passed' if ok else 'FAILED'}")
    sys.exit(0 if ok else 1)
