// The turnloom C++ client: include this one header.
#pragma once

#include "turnloom/agent.hpp"
#include "turnloom/client.hpp"
#include "turnloom/error.hpp"
#include "turnloom/events.hpp"
#include "turnloom/future.hpp"
#include "turnloom/graph.hpp"
#include "turnloom/params.hpp"
#include "turnloom/value.hpp"

// Not included here: turnloom/throwing.hpp (OrThrow), for builds with exceptions.
