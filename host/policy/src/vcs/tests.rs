use super::VcsOp::{self, *};
use crate::constraints::GitAccess::{self, *};

const ALL: [VcsOp; 9] = [
    Read,
    Fetch,
    FetchAllowlisted,
    Branch,
    BranchDelete,
    Commit,
    Discard,
    Push,
    ForcePush,
];

/// Spec 3.5 with the rule: `read-and-branch` never commits or
/// pushes; `local-only` never reaches a remote; restore and reset (they
/// discard work) only at `full`.
#[test]
fn the_level_table() {
    let expect = |op: VcsOp| -> [bool; 3] {
        match op {
            Read | Branch | BranchDelete => [true, true, true],
            Fetch | FetchAllowlisted => [false, true, true],
            Commit => [true, false, true],
            Discard | Push | ForcePush => [false, false, true],
        }
    };
    for op in ALL {
        let got: Vec<bool> = [LocalOnly, ReadAndBranch, Full]
            .iter()
            .map(|a: &GitAccess| op.permitted_at(*a))
            .collect();
        assert_eq!(got, expect(op), "{op:?}");
    }
}

#[test]
fn only_a_force_push_is_a_breaker() {
    for op in ALL {
        assert_eq!(op.breaker().is_some(), op == ForcePush, "{op:?}");
    }
}

#[test]
fn an_undeclared_operation_is_the_furthest_of_its_action_type() {
    assert_eq!(VcsOp::assumed_for("vcs:read"), Some(Fetch));
    assert_eq!(VcsOp::assumed_for("vcs:commit"), Some(Discard));
    assert_eq!(VcsOp::assumed_for("vcs:branch"), Some(BranchDelete));
    assert_eq!(VcsOp::assumed_for("vcs:push"), Some(ForcePush));
    assert_eq!(VcsOp::assumed_for("code:read"), None);
}

#[test]
fn reasons_name_the_levels_that_permit() {
    assert_eq!(Commit.permitted_levels(), "`local-only` or `full`");
    assert_eq!(Fetch.permitted_levels(), "`read-and-branch` or `full`");
    assert_eq!(Push.permitted_levels(), "`full`");
}
