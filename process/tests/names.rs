//! Registered names: errors, typed lookup, and names freed before links and monitors fire.

mod common;

use common::program;
use fibra_process::{self as process, Inbox, Pid, Reason, RegisterError, Signal, WhereisError};
use fibra_testing::WORKER_COUNTS;

fn idle(inbox: Inbox<()>) {
    loop {
        inbox.recv();
    }
}

#[test]
fn register_refuses_a_taken_name_a_named_process_and_an_ended_one() {
    let status = program(1, |inbox: Inbox<()>| {
        let other = process::spawn(idle);
        process::register("names-taken", inbox.pid()).unwrap();
        assert_eq!(
            process::register("names-taken", &other),
            Err(RegisterError::NameTaken)
        );
        assert_eq!(
            process::register("names-second", inbox.pid()),
            Err(RegisterError::AlreadyNamed)
        );
        process::exit(&other, Reason::Kill);
        assert_eq!(
            process::register("names-dead", &other),
            Err(RegisterError::Dead)
        );
        assert_eq!(process::whereis_id("names-dead"), None);
    });
    assert_eq!(status, 0);
}

#[test]
fn whereis_checks_the_message_type() {
    let status = program(1, |inbox: Inbox<u32>| {
        process::register("names-typed", inbox.pid()).unwrap();
        assert_eq!(process::whereis::<u32>("names-typed"), Ok(inbox.pid()));
        assert_eq!(
            process::whereis::<u64>("names-typed"),
            Err(WhereisError::WrongType)
        );
        assert_eq!(
            process::whereis::<u32>("names-nobody"),
            Err(WhereisError::NotRegistered)
        );
        process::whereis::<u32>("names-typed").unwrap().send(7);
        assert_eq!(inbox.recv().into_msg(), Some(7));
    });
    assert_eq!(status, 0);
}

#[test]
fn unregister_frees_the_name_and_registered_lists_names() {
    let status = program(1, |inbox: Inbox<()>| {
        process::register("names-listed", inbox.pid()).unwrap();
        assert!(process::registered().contains(&"names-listed".to_owned()));
        assert!(process::unregister("names-listed"));
        assert!(!process::unregister("names-listed"));
        assert!(!process::registered().contains(&"names-listed".to_owned()));
        // The process may take a name again.
        process::register("names-listed-again", inbox.pid()).unwrap();
    });
    assert_eq!(status, 0);
}

#[test]
fn a_name_is_freed_when_its_process_ends_before_links_and_monitors_hear() {
    for workers in WORKER_COUNTS {
        let status = program(workers, move |inbox: Inbox<()>| {
            process::trap_exit(true);
            let name = format!("names-reused-{workers}");
            let first: Pid<()> = process::Builder::new()
                .name(name.clone())
                .spawn_link(idle)
                .unwrap();
            process::monitor(&first);
            process::exit(&first, Reason::custom("gone"));
            // Whichever signal is read first, the name is already free.
            for _ in 0..2 {
                match inbox.recv() {
                    Signal::Exit { .. } | Signal::Down { .. } => {
                        assert_eq!(process::whereis_id(&name), None);
                    }
                    Signal::Msg(()) => unreachable!(),
                }
            }
            let second = process::spawn(idle);
            process::register(name.clone(), &second).unwrap();
            process::exit(&second, Reason::Kill);
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn a_process_ending_by_itself_frees_its_name_before_its_down() {
    for workers in WORKER_COUNTS {
        let status = program(workers, move |inbox: Inbox<()>| {
            let name = format!("names-self-{workers}");
            let (pid, _) = process::Builder::new()
                .name(name.clone())
                .spawn_monitor(|_: Inbox<()>| {})
                .unwrap();
            match inbox.recv() {
                Signal::Down { pid: who, .. } => {
                    assert_eq!(who, pid.id());
                    // The receiver of the Down may register the name at once.
                    process::register(name.clone(), inbox.pid()).unwrap();
                }
                _ => unreachable!(),
            }
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn a_builder_name_that_is_taken_fails_the_spawn() {
    let status = program(1, |inbox: Inbox<()>| {
        process::register("names-builder", inbox.pid()).unwrap();
        let outcome = process::Builder::new().name("names-builder").spawn(idle);
        assert!(matches!(
            outcome,
            Err(process::SpawnError::Register(RegisterError::NameTaken))
        ));
    });
    assert_eq!(status, 0);
}
