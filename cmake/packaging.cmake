# Debian packages, built by CPack's DEB generator (make package):
#   edgelock         the agent (static by design), its manual, the examples
#   libedgelock-dev  the static libraries, headers, pkg-config and CMake files
# A tree configured with -DEDGELOCK_MULTIARCH=ON (the libraries in
# lib/<triplet>, as Debian keeps them) and -DEDGELOCK_STATIC=ON, then
#   cmake --build TREE && (cd TREE && cpack -G DEB)
# Included from CMakeLists.txt after the install rules, which put every file
# in one of two components: agent and dev.

if(NOT EDGELOCK_MULTIARCH)
    message(STATUS "edgelock: Debian packages not set up (they need -DEDGELOCK_MULTIARCH=ON)")
    return()
endif()

# The package architecture is the target's, named from its triplet. CPack's
# default asks dpkg for the build host's, wrong for a cross build.
set(edgelock_deb_arch_of_x86_64-linux-gnu amd64)
set(edgelock_deb_arch_of_aarch64-linux-gnu arm64)
set(edgelock_deb_arch_of_arm-linux-gnueabihf armhf)
set(edgelock_deb_arch_of_i386-linux-gnu i386)
set(edgelock_deb_arch_of_riscv64-linux-gnu riscv64)
set(EDGELOCK_DEB_ARCH "${edgelock_deb_arch_of_${EDGELOCK_MULTIARCH_TRIPLET}}" CACHE STRING
    "Debian architecture of the packages (default: from the target's triplet)")
if(NOT EDGELOCK_DEB_ARCH)
    message(WARNING "edgelock: no Debian architecture known for ${EDGELOCK_MULTIARCH_TRIPLET}; "
        "set EDGELOCK_DEB_ARCH for make package")
    return()
endif()

set(EDGELOCK_DEB_MAINTAINER "edgelock maintainers <maintainers@edgelock.invalid>" CACHE STRING
    "Maintainer field of the Debian packages")
set(EDGELOCK_DEB_RELEASE 1 CACHE STRING "Debian revision of the packages (the -N of 0.2.0-N)")

# --- files only the packages carry (EXCLUDE_FROM_ALL: not in cmake --install) --
set(edgelock_deb_dir ${PROJECT_BINARY_DIR}/debian)
file(MAKE_DIRECTORY ${edgelock_deb_dir})
find_program(EDGELOCK_GZIP gzip REQUIRED)

# The changelog's one entry is dated by the last commit (or SOURCE_DATE_EPOCH),
# so a rebuild of the same source gives the same bytes.
if(DEFINED ENV{SOURCE_DATE_EPOCH})
    string(TIMESTAMP edgelock_deb_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
else()
    execute_process(COMMAND git log -1 --format=%ct
        WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
        OUTPUT_VARIABLE edgelock_deb_epoch OUTPUT_STRIP_TRAILING_WHITESPACE
        RESULT_VARIABLE edgelock_git_failed ERROR_QUIET)
    if(edgelock_git_failed OR NOT edgelock_deb_epoch)
        set(edgelock_deb_epoch 0)
    endif()
    set(ENV{SOURCE_DATE_EPOCH} ${edgelock_deb_epoch})
    string(TIMESTAMP edgelock_deb_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
    unset(ENV{SOURCE_DATE_EPOCH})
endif()

# The copyright file in Debian's machine-readable format, from LICENSE (MIT,
# which Debian calls Expat).
file(STRINGS ${PROJECT_SOURCE_DIR}/LICENSE edgelock_license_lines)
set(edgelock_license_holder "")
set(edgelock_license_text "")
set(edgelock_in_text FALSE)
foreach(line IN LISTS edgelock_license_lines)
    if(line MATCHES "^Copyright \\(c\\) (.+)$")
        set(edgelock_license_holder ${CMAKE_MATCH_1})
        set(edgelock_in_text TRUE)
    elseif(edgelock_in_text AND (edgelock_license_text OR line))
        if(line)
            string(APPEND edgelock_license_text " ${line}\n")
        else()
            string(APPEND edgelock_license_text " .\n")
        endif()
    endif()
endforeach()
if(NOT edgelock_license_holder OR NOT edgelock_license_text)
    message(FATAL_ERROR "edgelock: LICENSE has no 'Copyright (c) ...' line and text after it")
endif()

# Each package gets its own copyright, changelog and lintian overrides.
function(edgelock_deb_docs component package comment)
    set(dir ${edgelock_deb_dir}/${package})
    file(MAKE_DIRECTORY ${dir})
    set(copyright "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n")
    string(APPEND copyright "Upstream-Name: ${PROJECT_NAME}\n${comment}\n")
    string(APPEND copyright "Files: *\nCopyright: ${edgelock_license_holder}\nLicense: Expat\n")
    string(APPEND copyright "${edgelock_license_text}")
    file(WRITE ${dir}/copyright "${copyright}")

    set(changelog "${PROJECT_NAME} (${PROJECT_VERSION}-${EDGELOCK_DEB_RELEASE}) unstable; urgency=medium\n\n")
    string(APPEND changelog "  * Package of edgelock ${PROJECT_VERSION}.\n\n")
    string(APPEND changelog " -- ${EDGELOCK_DEB_MAINTAINER}  ${edgelock_deb_date}\n")
    file(WRITE ${dir}/changelog.Debian "${changelog}")
    execute_process(COMMAND ${EDGELOCK_GZIP} -9nf ${dir}/changelog.Debian
        COMMAND_ERROR_IS_FATAL ANY)

    set(docdir ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package})
    install(FILES ${dir}/copyright ${dir}/changelog.Debian.gz
        DESTINATION ${docdir} COMPONENT ${component} EXCLUDE_FROM_ALL)
    set(overrides ${PROJECT_SOURCE_DIR}/cmake/lintian/${package})
    if(EXISTS ${overrides})
        install(FILES ${overrides} DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides
            COMPONENT ${component} EXCLUDE_FROM_ALL)
    endif()
endfunction()

# --- the packages ---------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ${PROJECT_NAME})
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${EDGELOCK_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${EDGELOCK_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_RELEASE ${EDGELOCK_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_SOURCE ${PROJECT_NAME})
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${EDGELOCK_DEB_ARCH})
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
# The package's synopsis is each component's own (the first line of its
# description below), not the project's.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "")
# Binaries and archives stripped as Debian's are, by the target's strip.
set(CPACK_EDGELOCK_STRIP ${CMAKE_STRIP})
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/deb_strip.cmake)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
set(CPACK_COMPONENTS_ALL dev)

if(TARGET edgelock_cli)
    list(PREPEND CPACK_COMPONENTS_ALL agent)
    set(CPACK_DEBIAN_AGENT_PACKAGE_NAME edgelock)
    set(CPACK_DEBIAN_AGENT_PACKAGE_SECTION admin)
    set(CPACK_COMPONENT_AGENT_DESCRIPTION "distributed locks on Redis for jobs, like flock(1)
edgelock runs a command while it holds a lock on one or more Redis servers,
as flock(1) does with a file: jobs of a fleet of gateways that must not run
at the same time take turns, whichever host they run on.
.
The agent renews the lock while the command runs, stops the command's whole
process group when the lock may be lost, and releases it when the command
exits. It speaks to standalone Redis, Sentinel and Cluster deployments, with
TLS, and takes a lock on several independent servers at once (Redlock).
.
The program is statically linked, to run on any gateway's C library. This
package holds the agent, its manual and systemd unit examples.")
    if(EDGELOCK_STATIC)
        # Static: no shared library to depend on. The agent carries the C
        # library and mbedTLS, named in its copyright file.
        set(edgelock_agent_comment "Comment: The edgelock program is statically linked. It contains the GNU C
 Library (LGPL-2.1+, see /usr/share/common-licenses/LGPL-2.1), parts of GCC's
 runtime libraries (GPL-3+ with the GCC Runtime Library Exception)")
        if(TARGET edgelock_tls_mbedtls)
            string(APPEND edgelock_agent_comment " and Mbed TLS
 (Apache-2.0, see /usr/share/common-licenses/Apache-2.0)")
        endif()
        string(APPEND edgelock_agent_comment ", each under its\n own license.\n")
    else()
        set(CPACK_DEBIAN_AGENT_PACKAGE_SHLIBDEPS ON)
        set(edgelock_agent_comment "")
    endif()
    edgelock_deb_docs(agent edgelock "${edgelock_agent_comment}")
endif()

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libedgelock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DESCRIPTION "distributed locks on Redis for edge devices (static library)
edgelock is a C++17 library for distributed locks on Redis, built for ARM
Linux gateways: a core without heap, exceptions or I/O (the RESP codec, the
lock state machine and the Redlock rule), a driver on top of it and a C API.
.
This package holds the static libraries (the library, its POSIX port and,
when built, its TLS transport over Mbed TLS), the headers, a pkg-config file
and a CMake package: find_package(edgelock).")
if(TARGET edgelock_tls_mbedtls)
    # The TLS archive is compiled against this Mbed TLS's headers (its API
    # changes between major versions), and the CMake package's
    # edgelock::tls_mbedtls links libmbedtls-dev's archives by path.
    set(edgelock_mbed_version "")
    foreach(header build_info.h version.h)  # Mbed TLS 3, then 2
        if(NOT edgelock_mbed_version AND EXISTS ${EDGELOCK_MBEDTLS_INCLUDE_DIR}/mbedtls/${header})
            file(STRINGS ${EDGELOCK_MBEDTLS_INCLUDE_DIR}/mbedtls/${header} edgelock_mbed_version
                REGEX "#define MBEDTLS_VERSION_STRING +\"")
        endif()
    endforeach()
    if(NOT edgelock_mbed_version MATCHES "\"(([0-9]+)\.[0-9]+)")
        message(FATAL_ERROR "edgelock: no MBEDTLS_VERSION_STRING in mbedTLS's headers")
    endif()
    math(EXPR edgelock_mbed_next_major "${CMAKE_MATCH_2} + 1")
    set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
        "libmbedtls-dev (>= ${CMAKE_MATCH_1}), libmbedtls-dev (<< ${edgelock_mbed_next_major})")
endif()
edgelock_deb_docs(dev libedgelock-dev "")

include(CPack)
