//! `toolgate-sandbox`: the launcher of contained children, an executable of its own beside `toolgate`. The gateway
//! starts it without copying itself for each contained command, code-mode worker and contained upstream, hands it
//! the plan on its standard input, and it sets the isolation layers up in its own small address space before it
//! execs the command. It is never run by hand.

fn main() {
    sandbox::launcher_main()
}
