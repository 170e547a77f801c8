//! Circuit breakers: commands that always need a person.

use super::super::circuit_breaker;
use super::{HOME, WS, breaker, parse};

fn fires(line: &str) {
    assert!(breaker(line).is_some(), "expected a breaker for {line:?}");
}

fn quiet(line: &str) {
    assert_eq!(breaker(line), None, "no breaker expected for {line:?}");
}

#[test]
fn recursive_rm_of_root_in_every_spelling() {
    for line in [
        "rm -rf /",
        "rm -r /",
        "rm -R /",
        "rm -Rf /",
        "rm -fr /",
        "rm -r -f /",
        "rm -f -r /",
        "rm --recursive --force /",
        "rm --recursive /",
        "rm --rec /",
        "rm / -rf",
        "rm -rf -- /",
        "rm -rf /*",
        "rm -rf //",
        "rm -rf /./",
        "rm -rf /tmp/..",
        "rm -rfv /",
        "rm -rf --no-preserve-root /",
        "r'm' -rf /",
        "\"r\"\"m\" -rf /",
        "\\rm -rf /",
        "/bin/rm -rf /",
        "/bin/r? -rf /",
        "{rm,-rf,/}",
        "$'\\x72m' -rf /",
    ] {
        fires(line);
    }
}

#[test]
fn top_level_home_and_workspace() {
    for line in [
        "rm -rf /usr",
        "rm -fr /home",
        "rm -rf /etc/",
        "rm -rf /tmp",
        "rm -rf ~",
        "rm -rf ~/",
        "rm -rf ~/*",
        "rm --recursive --force ~",
        "rm -rf $HOME",
        "rm -rf \"$HOME\"",
        "rm -rf ${HOME}",
        "rm -rf \"${HOME}/\"",
        "rm -rf /home/agent",
        "rm -rf /home/agent/",
        "rm -rf ~root",
        "rm -rf /work/proj",
        "rm -rf /work",
        "rm -rf .",
        "rm -rf ./",
        "rm -rf *",
        "rm -rf ./*",
        "rm -rf .*",
        "rm -rf \"$PWD\"",
        "rm -rf $(pwd)",
    ] {
        fires(line);
    }
}

#[test]
fn ordinary_deletes_do_not_fire() {
    for line in [
        "rm -rf target",
        "rm -rf ./node_modules",
        "rm -rf /work/proj/build",
        "rm -rf ~/.cache/foo",
        "rm -rf /tmp/x",
        "rm -f /",
        "rm /etc",
        "rm -rf $BUILD_DIR",
        "rm -rf \"${OUT:?}/\"*",
        "echo rm -rf /",
        "ls -la",
        "rm -rf *.o",
    ] {
        quiet(line);
    }
}

#[test]
fn seen_through_wrappers_and_nested_strings() {
    for line in [
        "ls && rm -rf /",
        "timeout 5 rm -rf ~",
        "nice -n 10 sudo rm -rf /",
        "sudo timeout 5 nice -n 5 rm -rf /",
        "bash -c 'rm -rf /'",
        "sh -c \"cd / && rm -rf *\"",
        "eval \"rm -rf /\"",
        "echo $(rm -rf /)",
        "find / -exec rm -rf / \\;",
        "xargs rm -rf /",
        "env -i rm -rf ~",
        "FOO=1 rm -rf /",
        "(rm -rf /)",
        "if true; then rm -rf /; fi",
    ] {
        fires(line);
    }
}

#[test]
fn cd_is_followed() {
    fires("cd / && rm -rf *");
    fires("cd /usr; rm -rf .");
    fires("cd && rm -rf *");
    fires("cd ~ && rm -rf ./*");
    fires("cd $SOMEWHERE && rm -rf *");
    quiet("cd build && rm -rf *");
    quiet("cd /tmp/x && rm -rf *");
}

#[test]
fn possibly_empty_variables() {
    fires("rm -rf \"$STEAMROOT/\"*");
    fires("rm -rf $X/");
    fires("rm -rf ${X}/*");
    quiet("rm -rf $X/build");
}

#[test]
fn disks() {
    for line in [
        "mkfs /dev/sda1",
        "mkfs.ext4 /dev/sda1",
        "mke2fs /dev/sdb",
        "wipefs -a /dev/sda",
        "fdisk /dev/sda",
        "sfdisk /dev/nvme0n1 < layout",
        "parted /dev/sda mklabel gpt",
        "shred /dev/sda",
        "shred -n 3 -z /dev/nvme0n1",
        "dd if=/dev/zero of=/dev/sda",
        "dd if=img of=/dev/disk2 bs=4M",
        "sudo dd if=/dev/urandom of=/dev/mmcblk0",
        "echo x > /dev/sda",
        "cat img >> /dev/nvme0n1p1",
        "cat img > /dev/mapper/root",
        "echo x &> /dev/vda",
        "echo x | sudo tee /dev/sda",
        "cp img /dev/sdb",
        "blkdiscard /dev/sda",
        "bash -c 'dd if=/dev/zero of=/dev/sda'",
    ] {
        fires(line);
    }
    for line in [
        "dd if=/dev/zero of=/dev/null",
        "dd if=/dev/sda of=backup.img",
        "dd if=x of=out.img",
        "echo x > /dev/null",
        "fdisk -l",
        "fdisk -l /dev/sda",
        "shred secret.txt",
        "cp /dev/sda backup.img",
        "echo x > /dev/stderr",
    ] {
        quiet(line);
    }
}

#[test]
fn fork_bombs() {
    for line in [
        ":(){ :|:& };:",
        ":(){ :|: & };:",
        ": () { : | : & } ; :",
        ":(){:|:&};:",
        "f(){ f|f& };f",
        "bomb() { bomb | bomb & }; bomb",
        "function b { b | b & }; b",
        "bash -c ':(){ :|:& };:'",
    ] {
        fires(line);
    }
    quiet("f() { ls | grep x & }; f");
    quiet("f() { f; }");
}

#[test]
fn chmod_and_chown() {
    for line in [
        "chmod -R 777 /",
        "chmod -R 777 /etc",
        "chmod --recursive 000 ~",
        "chmod -vR 755 .",
        "chown -R nobody /",
        "chown -R user:user ~",
        "chgrp -R users /usr",
        "sudo chmod -R a+w /",
    ] {
        fires(line);
    }
    for line in [
        "chmod 777 /",
        "chmod -r x",
        "chmod -R 755 src",
        "chown -R me build",
    ] {
        quiet(line);
    }
}

#[test]
fn workspace_root_depends_on_cwd() {
    let sub = format!("{WS}/src");
    assert_eq!(circuit_breaker(&parse("rm -rf *"), WS, &sub, HOME), None);
    assert!(circuit_breaker(&parse("rm -rf .."), WS, &sub, HOME).is_some());
    assert!(circuit_breaker(&parse("rm -rf /work/proj/"), WS, &sub, HOME).is_some());
}
