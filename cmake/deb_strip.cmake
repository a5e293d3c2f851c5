# A CPack script (CPACK_PRE_BUILD_SCRIPTS, cmake/packaging.cmake): strips the
# staged files the way Debian's own packages are, with the target's strip
# (CPACK_EDGELOCK_STRIP): the agent keeps no symbols it does not need, the
# archives keep their symbols but no debugging sections, and neither keeps the
# compiler's .comment and .note sections. Archives are rewritten
# deterministically (no time stamps, owners or modes).
if(NOT CPACK_EDGELOCK_STRIP)
    message(FATAL_ERROR "deb_strip.cmake: CPACK_EDGELOCK_STRIP is not set")
endif()
file(GLOB_RECURSE edgelock_programs ${CPACK_TEMPORARY_DIRECTORY}/*/usr/bin/*)
file(GLOB_RECURSE edgelock_archives ${CPACK_TEMPORARY_DIRECTORY}/*.a)
foreach(file IN LISTS edgelock_programs)
    execute_process(COMMAND ${CPACK_EDGELOCK_STRIP} --strip-unneeded
        --remove-section=.comment --remove-section=.note ${file} COMMAND_ERROR_IS_FATAL ANY)
endforeach()
foreach(file IN LISTS edgelock_archives)
    execute_process(COMMAND ${CPACK_EDGELOCK_STRIP} --strip-debug --enable-deterministic-archives
        --remove-section=.comment --remove-section=.note ${file} COMMAND_ERROR_IS_FATAL ANY)
endforeach()
