//! The products toolgate replaces, spoken under their own command names: installed or linked as `toolscript-mcp`,
//! `toolfence`, `mcp-toolhub`, `mcp-toolhub-admin` or `mcp-unified-gateway`, the binary reads that product's files and flags and answers its commands, with toolgate's
//! policy engine, store, sandbox and audit underneath (nothing here is a second implementation). `dispatch`
//! chooses by the name the process was started under (`argv[0]`); `links` writes those names beside the binary.
//!
//! A product name whose surface is not built yet answers with what is missing and exits 2: never a silent
//! toolgate mode, which would read that product's files as something they are not.

pub mod links;
mod toolfence;
mod toolhub;
mod toolhub_admin;
mod toolscript;
mod unified;
pub(crate) mod unified_admin;
mod unified_events;
mod unified_gateway;
mod unified_profiles;
mod unified_remote;

use std::ffi::OsStr;
use std::path::Path;
use std::process::ExitCode;

/// One product name and whether toolgate speaks it yet.
pub struct Product {
    pub name: &'static str,
    /// What it replaces, for messages.
    pub replaces: &'static str,
    pub supported: bool,
}

/// Every name toolgate answers to besides its own.
pub const PRODUCTS: &[Product] = &[
    Product {
        name: "toolscript-mcp",
        replaces: "toolscript-mcp (code mode server)",
        supported: true,
    },
    Product {
        name: "toolfence",
        replaces: "ToolFence (stdio tool-call firewall)",
        supported: true,
    },
    Product {
        name: "mcp-toolhub",
        replaces: "ToolHub's server (`mcp-toolhub serve` and its 14 tools)",
        supported: true,
    },
    Product {
        name: "mcp-toolhub-admin",
        replaces: "ToolHub's admin CLI",
        supported: true,
    },
    Product {
        name: "mcp-unified-gateway",
        replaces: "MCP Unified's gateway and CLI",
        supported: true,
    },
];

/// The product this process was started as, from the file name of `argv[0]`.
pub fn invoked_as(argv0: Option<&OsStr>) -> Option<&'static Product> {
    let name = Path::new(argv0?).file_name()?.to_str()?;
    PRODUCTS.iter().find(|p| p.name == name)
}

/// Runs the product this process was started as, if it was started under a product's name.
pub fn dispatch() -> Option<ExitCode> {
    let product = invoked_as(std::env::args_os().next().as_deref())?;
    crate::runtime::quiet_broken_pipe();
    let result = match product.name {
        "toolscript-mcp" => toolscript::main(),
        "toolfence" => toolfence::main(),
        "mcp-toolhub" => toolhub::main(),
        "mcp-toolhub-admin" => toolhub_admin::main(),
        "mcp-unified-gateway" => unified::main(),
        _ => {
            eprintln!(
                "{}: not supported yet by this toolgate build: {} is not implemented, so this name does nothing \
                 rather than read that product's files as toolgate's. Run the product itself, or `toolgate` \
                 under its own name.",
                product.name, product.replaces
            );
            return Some(ExitCode::from(crate::runtime::EXIT_USAGE));
        }
    };
    Some(match result {
        Ok(code) => code,
        Err(e) if crate::runtime::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}: {}", product.name, crate::runtime::error_chain(&e));
            ExitCode::from(crate::runtime::EXIT_USAGE)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_is_the_file_name_of_argv0_exactly() {
        let name = |s: &str| invoked_as(Some(OsStr::new(s))).map(|p| p.name);
        assert_eq!(name("/usr/local/bin/toolfence"), Some("toolfence"));
        assert_eq!(name("toolscript-mcp"), Some("toolscript-mcp"));
        assert_eq!(name("mcp-toolhub-admin"), Some("mcp-toolhub-admin"));
        assert_eq!(name("/usr/bin/toolgate"), None);
        assert_eq!(name("toolfence-old"), None);
        assert_eq!(name("/opt/toolfence/bin"), None);
    }
}
