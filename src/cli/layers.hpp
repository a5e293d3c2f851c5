// The layers of the agent's options (settings.hpp), lowest first: the
// configuration file, the environment, the command line; the built-in
// defaults are options{}. Each layer applies its settings over the ones
// below and records where they came from in options::shown.
#pragma once

#include <string>
#include <vector>

#include "options.hpp"
#include "settings.hpp"

namespace edgelock_cli {

// A setting as the command line gave it, kept for the last layer.
struct given {
    setting which;
    std::string name;  // as typed: "-t", "--ttl"
    std::string value;
};

// What argv holds apart from settings.
struct command_line {
    std::vector<given> settings;
    std::vector<std::string> operands;
    std::string config;  // --config; "" when not given
    bool config_given = false;
};

// The file of --config, else $EDGELOCK_CONFIG, else EDGELOCK_DEFAULT_CONFIG
// (whose absence is no error); "none" reads none.
bool file_layer(const command_line& cl, options& o, std::string& error);
// $EDGELOCK_NODES and $REDISCLI_AUTH.
bool environment_layer(options& o, std::string& error);
// argv's settings, in order: the last of one setting wins.
bool command_line_layer(const command_line& cl, options& o, std::string& error);

// Reads the password files the winning layers name.
bool read_password_files(options& o, std::string& error);

}  // namespace edgelock_cli
