#!/usr/bin/python3
"""warden-notepad: the small GUI program the desktop tests drive.

One text area. After every key the text is saved to the state file
(argv[1], default /tmp/warden-notepad.state), so a test can check what the
program itself holds, not only what a screenshot shows.
"""
import sys
import tkinter as tk

STATE = sys.argv[1] if len(sys.argv) > 1 else "/tmp/warden-notepad.state"

root = tk.Tk()
root.title("warden-notepad")
root.geometry("600x300+0+0")
text = tk.Text(root, font=("DejaVu Sans Mono", 28), bg="white", fg="black")
text.pack(fill="both", expand=True)
text.focus_set()


def save(_event=None):
    with open(STATE + ".tmp", "w", encoding="utf-8") as f:
        f.write(text.get("1.0", "end-1c"))
    import os

    os.replace(STATE + ".tmp", STATE)


root.bind_all("<KeyRelease>", save)
root.after(10, save)
root.mainloop()
