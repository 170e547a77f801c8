//! Deny and ask matching: every subcommand, every wrapper, nested strings.

use super::deny;

#[test]
fn hidden_behind_a_harmless_command() {
    assert!(deny("rm -rf *", "ls && rm -rf /"));
    assert!(deny("rm -rf *", "ls; rm -rf /"));
    assert!(deny("rm -rf *", "ls || rm -rf /"));
    assert!(deny("rm -rf *", "ls | rm -rf /"));
    assert!(deny("rm -rf *", "ls & rm -rf /"));
    assert!(deny("rm -rf *", "ls\nrm -rf /"));
    assert!(deny("curl *", "ls; curl x | sh"));
    assert!(deny("sh", "ls; curl x | sh"));
    assert!(deny("sudo *", "echo ok | sudo tee /etc/passwd"));
    assert!(deny("tee /etc/*", "echo ok | sudo tee /etc/passwd"));
}

#[test]
fn wrappers_are_seen_through() {
    assert!(deny("rm -rf *", "timeout 5 rm -rf ~"));
    assert!(deny("rm -rf *", "nice -n 10 sudo rm -rf /"));
    assert!(deny("rm -rf *", "sudo timeout 5 nice -n 5 rm -rf /"));
    assert!(deny("rm -rf *", "sudo -u root -E -- rm -rf /"));
    assert!(deny("rm -rf *", "sudo -uroot rm -rf /"));
    assert!(deny("rm -rf *", "doas -u root rm -rf /"));
    assert!(deny(
        "rm -rf *",
        "timeout -s KILL --preserve-status 5m rm -rf /"
    ));
    assert!(deny("rm -rf *", "nice -10 rm -rf /"));
    assert!(deny("rm -rf *", "nice --adjustment=5 rm -rf /"));
    assert!(deny("rm -rf *", "ionice -c 3 -n 7 rm -rf /"));
    assert!(deny("rm -rf *", "nohup rm -rf / &"));
    assert!(deny("rm -rf *", "env -i -u PATH FOO=1 rm -rf /"));
    assert!(deny("rm -rf *", "FOO=bar BAZ=1 rm -rf /"));
    assert!(deny("rm -rf *", "command -p rm -rf /"));
    assert!(deny("rm -rf *", "builtin exec rm -rf /"));
    assert!(deny("rm -rf *", "exec -a name rm -rf /"));
    assert!(deny("rm -rf *", "time -p rm -rf /"));
    assert!(deny("rm -rf *", "stdbuf -oL -e 0 rm -rf /"));
    assert!(deny("rm -rf *", "setsid -f rm -rf /"));
    assert!(deny("rm -rf *", "chrt -f 99 rm -rf /"));
    assert!(deny("rm -rf *", "taskset 0x1 rm -rf /"));
    assert!(deny("rm -rf *", "xargs -0 -n 1 rm -rf"));
    assert!(deny("rm *", "find . | xargs -I{} rm {}"));
    assert!(deny("rm -rf *", "watch -n 5 rm -rf /tmp/x"));
    assert!(deny("rm -rf *", "unbuffer rm -rf /"));
    assert!(deny("rm -rf *", "busybox rm -rf /"));
    assert!(deny("rm -rf *", "chroot /mnt rm -rf /"));
    assert!(deny("rm -rf *", "flock /tmp/l rm -rf /"));
    assert!(deny("rm -rf *", "strace -f -o log rm -rf /"));
    assert!(deny("rm -rf *", "unshare --weird-option rm -rf /"));
    assert!(deny("rm -rf *", "/usr/bin/sudo /bin/rm -rf /"));
    assert!(deny("rm -rf *", "! sudo rm -rf /"));
}

#[test]
fn unstripped_form_is_matched_too() {
    assert!(deny("sudo *", "sudo ls"));
    assert!(deny("timeout 5 rm *", "timeout 5 rm x"));
    assert!(deny("env *", "env FOO=1 ls"));
    assert!(deny("/bin/rm *", "/bin/rm x"));
    assert!(deny("/bin/rm *", "rm x"));
}

#[test]
fn command_lookup_is_not_running() {
    assert!(!deny("rm *", "command -v rm"));
    assert!(deny("rm *", "command rm x"));
}

#[test]
fn nested_shell_strings_are_searched() {
    assert!(deny("rm -rf *", "bash -c 'rm -rf /'"));
    assert!(deny("rm -rf *", "sh -c \"ls && rm -rf /\""));
    assert!(deny("rm -rf *", "sudo bash -lc 'rm -rf /'"));
    assert!(deny("rm -rf *", "eval \"rm -rf /\""));
    assert!(deny("rm -rf *", "eval rm -rf /"));
    assert!(deny("rm -rf *", "bash -c \"bash -c 'sudo rm -rf /'\""));
    assert!(deny("rm -rf *", "su -c 'rm -rf /'"));
    assert!(deny("rm -rf *", "env -S 'rm -rf /'"));
    assert!(deny("rm -rf *", "trap 'rm -rf /' EXIT"));
    assert!(deny("rm -rf *", "xargs sh -c 'rm -rf /'"));
    assert!(deny("rm -rf *", "find . -exec sh -c 'rm -rf /' \\;"));
    assert!(deny("rm *", "find . -exec rm {} \\;"));
    assert!(deny("rm *", "find . -execdir sudo rm {} +"));
}

#[test]
fn substitutions_are_searched() {
    assert!(deny("rm -rf *", "echo $(rm -rf /)"));
    assert!(deny("rm -rf *", "echo `rm -rf /`"));
    assert!(deny("rm -rf *", "echo \"$(rm -rf /)\""));
    assert!(deny("rm -rf *", "x=$(rm -rf /)"));
    assert!(deny("rm -rf *", "cat <(rm -rf /)"));
    assert!(deny("rm -rf *", "ls > >(rm -rf /)"));
    assert!(deny("echo *", "$(echo rm) -rf /"));
}

#[test]
fn flag_spellings_are_compared_as_sets() {
    assert!(deny("rm -rf *", "rm -r -f /"));
    assert!(deny("rm -rf *", "rm -fr /home"));
    assert!(deny("rm -rf *", "rm -Rf /"));
    assert!(deny("rm -rf *", "rm --recursive --force ~"));
    assert!(deny("rm -rf *", "rm / -rf"));
    assert!(deny("rm -rf *", "rm -rfv /"));
    assert!(deny("rm -rf *", "rm -r -v -f -- /"));
    assert!(!deny("rm -rf *", "rm -f x"));
    assert!(!deny("rm -rf *", "rm -r x"));
    assert!(deny("git push --force *", "git push origin main --force"));
    assert!(!deny("git push --force *", "git push --force-with-lease"));
    // Exact deny patterns stay exact.
    assert!(!deny("git push --force", "git push --force origin"));
}

#[test]
fn glob_command_names_are_matched() {
    assert!(deny("rm -rf *", "/bin/r? -rf /"));
    assert!(deny("rm -rf *", "/bin/r* -rf /"));
    assert!(deny("rm -rf *", "/bin/[r]m -rf /"));
    assert!(!deny("rm -rf *", "/bin/l? -rf /"));
}

#[test]
fn brace_expansion_is_seen() {
    assert!(deny("rm -rf *", "{rm,-rf,/}"));
    assert!(deny("rm -rf *", "sudo {rm,-rf,/}"));
}

#[test]
fn non_matches() {
    assert!(!deny("rm -rf *", "ls -la"));
    assert!(!deny("rm -rf *", "echo rm -rf /"));
    assert!(!deny("rm -rf *", "git commit -m 'rm -rf /'"));
    assert!(!deny("npm run *", "npm runner"));
    assert!(!deny("rm *", "cat <<'EOF'\nrm x\nEOF"));
}
