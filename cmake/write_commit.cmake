# Writes the current commit (git describe --always --dirty) into OUT as a C++ header, at build
# time, touching the file only when the text changes. Run with -DSRC=<repo> -DOUT=<header>.
execute_process(COMMAND git describe --always --dirty --abbrev=12
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET RESULT_VARIABLE status)
if(NOT status EQUAL 0 OR NOT commit)
  set(commit "unknown")
endif()
set(text "// Generated at build time by cmake/write_commit.cmake.\n#pragma once\n#define TORUSGATE_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
