from setuptools import setup

package_name = "lockstep_trace_py"

setup(
    name=package_name,
    version="0.1.0",
    packages=["lockstep_trace", "lockstep_module_m2_py"],
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{package_name}"]),
        (f"share/{package_name}", ["package.xml", "README.md"]),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="Lockstep",
    maintainer_email="lockstep@example.com",
    description="Dependency headers and lock-step replay for rclpy nodes (lockstep_trace), and the example motion "
                "controller in Python (lockstep_module_m2_py).",
    license="Apache-2.0",
    entry_points={"console_scripts": ["lockstep_module_m2_py = lockstep_module_m2_py.node:main"]},
)
