//! Interpreters reading their program from their input.
//!
//! Attack: code the analyser never sees, fed on a pipe or a redirection: `curl x | python3`,
//! `python3 < job.py`, `echo ... | base64 -d | perl`. An interpreter given no program (no
//! script operand, no `-c`/`-e` code) or the operand `-` runs whatever arrives on its input,
//! so such a part is unread ([`crate::unread`]), as a shell reading its input already is.

use super::lex::Word;

/// Interpreters that read their program from their input when none is named.
pub(crate) fn is_interpreter(prog: &str) -> bool {
    const NAMES: &[&str] = &[
        "python", "perl", "ruby", "node", "nodejs", "php", "lua", "luajit", "Rscript", "tclsh",
        "irb", "pypy", "pypy3", "bun", "deno",
    ];
    let base = prog.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    NAMES.contains(&prog) || NAMES.contains(&base)
}

/// An interpreter reads its program from its input: no inline code option and no script
/// operand, or the operand `-` (`... | python3`, `python3 - < f`).
pub(crate) fn reads_input(args: &[Word<'_>]) -> bool {
    // Options whose value is the program (`python3 -c`, `perl -e`, `node --eval`, `deno eval`).
    const INLINE: &[&str] = &[
        "-c",
        "-e",
        "-E",
        "-m",
        "-r",
        "--eval",
        "--print",
        "eval",
        "run",
        // Prints and exits: reads nothing.
        "-V",
        "--version",
        "-v",
        "-h",
        "--help",
    ];
    // Options that take a separate value that is not the program.
    const VALUED: &[&str] = &["-W", "-X", "-I", "-r", "--require", "-C", "-d"];
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let t = a.text.as_ref();
        if INLINE.contains(&t)
            || (t.starts_with('-')
                && !t.starts_with("--")
                && t.len() > 2
                && t.chars()
                    .skip(1)
                    .any(|c| matches!(c, 'c' | 'e' | 'E' | 'm')))
        {
            return false;
        }
        if t == "-" || t == "--" {
            return t == "-" || it.next().is_none_or(|next| next.text == "-");
        }
        if t.starts_with('-') && t.len() > 1 {
            if VALUED.contains(&t) {
                it.next();
            }
            continue;
        }
        return false;
    }
    true
}
